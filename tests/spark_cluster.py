"""A Spark standalone cluster on loopback for the tests: a master and workers of one core each, each worker with
its own work and local directories, so the driver and the executors are different processes that share nothing
but the warehouse directory."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise TimeoutError(what)


@contextmanager
def standalone_cluster(root: Path, spark_class: Path, workers: int = 2, worker_env: dict | None = None):
    """``{"master": "spark://127.0.0.1:PORT", "root": root}`` while a master and ``workers`` workers (one core,
    1 GB each) started with ``spark_class`` run; ``worker_env`` is added to the workers' environment (what their
    executors inherit). Stopped on exit."""
    port, ui = free_port(), free_port()
    base_env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    procs, logs = [], []

    def start(name, args, env):
        log = open(root / f"{name}.log", "w")
        logs.append(log)
        procs.append(processes.start([str(spark_class), *args], env=env, stdout=log, stderr=subprocess.STDOUT))

    def log_has(name, text):
        return text in (root / f"{name}.log").read_text()

    try:
        start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                         "--webui-port", str(ui)], base_env)
        master = f"spark://127.0.0.1:{port}"
        wait_until(lambda: log_has("master", "I have been elected leader"), 60, "master up")
        for i in range(workers):
            work, local = root / f"worker{i}" / "work", root / f"worker{i}" / "local"
            work.mkdir(parents=True)
            local.mkdir(parents=True)
            start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores",
                                 "1", "--memory", "1g", "--webui-port", "0", "--work-dir", str(work)],
                  {**base_env, **(worker_env or {}), "SPARK_WORKER_DIR": str(work), "SPARK_LOCAL_DIRS": str(local)})
        wait_until(lambda: all(log_has(f"worker{i}", "Successfully registered with master") for i in range(workers)),
                   90, "workers registered")
        yield {"master": master, "root": root}
    finally:
        for p in procs:
            processes.stop(p)
        for log in logs:
            log.close()


def executor_dirs(cluster: dict, workers: int = 2) -> list[Path]:
    """The executors' working directories the workers created (``worker*/work/app-*/N``)."""
    return sorted(p for i in range(workers) for p in (cluster["root"] / f"worker{i}" / "work").glob("app-*/*")
                  if p.is_dir())
