"""A Spark Connect server as a user starts it (python -m airflow_paimon.spark.connect_server), local[2] on 127.0.0.1
with a generated token, for the tests that run jobs on Spark Connect (tests/dag/test_connect.py, the scheduler
tests)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from airflow_paimon.spark.connect_server import TOKEN_ENV
import processes
from spark_cluster import free_port

IDLE_SECONDS = 3  # the server's Python daemons quit this soon after their session's last task (connect_daemon.py)


CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


def connect(url: str):
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(url).create()


def classic_again() -> None:
    """pyspark marks the process as in Connect mode when a test opens a remote session; later tests in this
    process (pytest-xdist runs other files in it) need classic sessions."""
    for name in CONNECT_ENV:
        os.environ.pop(name, None)


def start_server(port: int, log, *args: str, python: str = sys.executable, workers: str | None = None,
                 env: dict | None = None) -> subprocess.Popen:
    """The server as a user starts it (``python -m airflow_paimon.spark.connect_server``), local[2] on loopback;
    ``workers``: its Python workers' interpreter (default ``python``); ``env``: instead of this process's."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != TOKEN_ENV}
    env["AIRFLOW_PAIMON_DAEMON_IDLE_SECONDS"] = str(IDLE_SECONDS)
    command = [python, "-m", "airflow_paimon.spark.connect_server", "--host", "127.0.0.1", "--port",
               str(port), "--master", "local[2]", "--python", workers or python, *args]
    with open(log, "wb") as out:
        return processes.start(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_until_serving(server: subprocess.Popen, url: str, log) -> None:
    """Until the server answers a call (a session alone is no proof: pyspark opens one without a server)."""
    from airflow_paimon.spark.connect import reach

    deadline = time.monotonic() + 180
    while True:
        assert server.poll() is None, log.read_text()[-3000:]
        try:
            reach(url, 2)
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
            continue
        session = connect(url)
        try:
            assert session.version  # answered by the server
        finally:
            session.stop()
            classic_again()
        return


@contextmanager
def running_connect_server(home: Path, **how):
    """A Connect server on a free loopback port with a generated token, up until it accepts a session; stopped
    with everything under it after. pyspark sends a token only over TLS or to ``localhost``: clients name it so.
    ``how``: start_server's ``python``, ``workers``, ``env``."""
    port = free_port()
    log, token_file = home / "server.log", home / "token"
    server = start_server(port, log, "--token-file", str(token_file), **how)
    try:
        deadline = time.monotonic() + 30
        while not token_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        token = token_file.read_text().strip()
        url = f"sc://localhost:{port}/;token={token}"
        wait_until_serving(server, url, log)
        yield {"url": url, "port": port, "pid": server.pid, "token": token, "token_file": token_file, "log": log}
    finally:
        processes.stop(server, timeout=30)


def connection(server: dict) -> dict:
    """The ``spark_connect`` Airflow connection of ``server`` (as AIRFLOW_CONN_SPARK_DEFAULT's JSON)."""
    return {"conn_type": "spark_connect", "host": "localhost", "port": server["port"], "password": server["token"]}
