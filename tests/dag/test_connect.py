"""Spark Connect mode end to end: a real Connect server on 127.0.0.1 (airflow_paimon/spark/connect_server.py),
the write and compaction DAG run with dag.test() on a ``spark_connect`` connection, the table read back with pypaimon
against the pandas oracle. The tasks start no process (no spark-submit, no driver JVM, no Python driver);
a killed task stops its work on the server and commits nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pandas as pd
import pytest
from airflow.exceptions import AirflowException

from airflow_paimon.engine.layout import STAGED_FILE
from airflow_paimon.engine.scan import latest_snapshot
from airflow_paimon.engine.specs import BootstrapSpec
from airflow_paimon.engine.table import get_table
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator
from airflow_paimon.spark.bootstrap import run_bootstrap
from airflow_paimon.spark.connect import default_parallelism
from airflow_paimon.spark.connect_server import TOKEN_ENV
from airflow_paimon.spark.submit import stop_process_group
from compaction_tables import batches, cross_partition_table
from dag.dagrun import run_dag, use_warehouse
from dag.test_kill import SLOW_SOURCE, processes_with, slow_write, wait_for
from oracle import assert_table_equals, expected_upsert
import processes
from spark_cluster import free_port

pytestmark = [pytest.mark.connect, pytest.mark.dag]

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


@pytest.fixture(autouse=True)
def _classic_after_each_test():
    yield
    classic_again()


def server_children(pid: int) -> list[str]:
    """Command lines of the server's Python processes (its daemons and their workers)."""
    out = subprocess.run(["ps", "-o", "pid=,ppid=,args=", "-e"], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in out.splitlines()]
    parents = {int(p): int(pp) for p, pp, *_ in rows}
    def under(p):
        while p in parents and p != 1:
            p = parents[p]
            if p == pid:
                return True
        return False
    return [args for p, _, args in rows if under(int(p)) and "connect_daemon" in args]


def start_server(port: int, log, *args: str) -> subprocess.Popen:
    """The server as a user starts it (python -m airflow_paimon.spark.connect_server), local[2] on loopback."""
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    env["AIRFLOW_PAIMON_DAEMON_IDLE_SECONDS"] = str(IDLE_SECONDS)
    command = [sys.executable, "-m", "airflow_paimon.spark.connect_server", "--host", "127.0.0.1", "--port",
               str(port), "--master", "local[2]", "--python", sys.executable, *args]
    with open(log, "wb") as out:
        return processes.start(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_until_serving(server: subprocess.Popen, url: str, log) -> None:
    deadline = time.monotonic() + 180
    while True:
        assert server.poll() is None, log.read_text()[-3000:]
        try:
            connect(url).stop()
            classic_again()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A Spark Connect server (local[2]) on a free loopback port with a generated token, up until it accepts a
    session; stopped with everything under it at the end. pyspark sends a token only over TLS or to
    ``localhost``: clients name it so."""
    port = free_port()
    home = tmp_path_factory.mktemp("connect")
    log, token_file = home / "server.log", home / "token"
    server = start_server(port, log, "--token-file", str(token_file))
    try:
        deadline = time.monotonic() + 30
        while not token_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        token = token_file.read_text().strip()
        url = f"sc://localhost:{port}/;token={token}"
        wait_until_serving(server, url, log)
        yield {"url": url, "port": port, "pid": server.pid, "token": token, "token_file": token_file, "log": log}
    finally:
        stop_process_group(server, grace_seconds=30)


def use_connect(monkeypatch, server: dict) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark_connect", "host": "localhost",
                                                                 "port": server["port"], "password": server["token"]}))


class ProcessWatch:
    """Samples, while a DAG runs, every process carrying a marker in its environment: anything the tasks
    start (spark-submit's JVM, a Python driver) inherits it; the Connect server, started before, does not."""

    def __init__(self, monkeypatch):
        self.marker = uuid.uuid4().hex
        monkeypatch.setenv("AIRFLOW_PAIMON_CONNECT_TEST", self.marker)
        self.seen: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self._stop.wait(0.2):
            self.seen.update(processes_with(self.marker))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def moved_keys(before: list[pd.DataFrame], batch: pd.DataFrame) -> int:
    """Keys of ``batch`` already in the table under another partition (cross-partition moves)."""
    was = expected_upsert(before, "id").set_index("id")["dt"]
    now = batch.drop_duplicates("id", keep="last").set_index("id")["dt"]
    common = now.index.intersection(was.index)
    return int((was[common] != now[common]).sum())


def test_write_and_compact_dag_on_spark_connect(airflow_home, warehouse, monkeypatch, connect_server, tmp_path):
    """Two runs of write → commit → full compaction → expiry → orphan removal, every job on the Connect server
    or, driver-only, in the task process."""
    from paimon_compact_dags import compact_dag

    use_warehouse(monkeypatch, warehouse)
    use_connect(monkeypatch, connect_server)
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)  # as a fresh task process (the fixture's probe set it)
    seed, *runs = batches(3, seed=31)
    cross_partition_table(warehouse, [seed])  # snapshot 1, in-process
    written = [seed]
    for i, batch in enumerate(runs):
        source = tmp_path / f"batch{i}.parquet"
        batch.to_parquet(source, index=False)
        moved = moved_keys(written, batch)
        assert 0 < moved < len(batch)  # the batch mixes moves, in-place updates and new keys
        with ProcessWatch(monkeypatch) as watch:
            run, states, xcoms = run_dag(compact_dag, conf={"source": str(source)})
        assert run.state == "success", states
        assert watch.seen == {}, f"the tasks started processes: {watch.seen}"
        written.append(batch)
        assert xcoms["assign_and_write"]["moved_keys"] == moved
        assert xcoms["assign_and_write"]["rows_in"] == len(batch)
        assert xcoms["commit"]["snapshot_id"] == 2 * i + 2 and not xcoms["commit"]["already_committed"]
        assert xcoms["compact"]["snapshot_id"] == 2 * i + 3 and xcoms["compact"]["compacted_buckets"] > 0
        assert states["compact_rarely"] == "skipped"
        table = get_table({"warehouse": warehouse}, "db.t")
        assert latest_snapshot(table).commit_kind == "COMPACT"
        assert_table_equals(table, expected_upsert(written, "id"), "id")
    assert xcoms["expire_snapshots"]["expired_snapshots"] > 0
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ  # the test process is classic again
    # every task's session was released and its Python daemon on the server quit (Spark 4.2 keeps one per session)
    assert wait_for(lambda: not server_children(connect_server["pid"]), 30), server_children(connect_server["pid"])


def test_a_write_dag_on_spark_connect_runs_its_client_in_the_job_environment(airflow_home, warehouse, monkeypatch,
                                                                              connect_server, tmp_path):
    """With a job environment configured ([paimon] job_python another interpreter than the task's), each job's
    Connect client runs there, a step process of the task (the token in its spec file, never on argv)."""
    from paimon_compact_dags import compact_dag

    job_python = tmp_path / "job-env-python"  # another path to an interpreter with the job side
    job_python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    job_python.chmod(0o755)
    monkeypatch.setenv("AIRFLOW__PAIMON__JOB_PYTHON", str(job_python))
    use_warehouse(monkeypatch, warehouse)
    use_connect(monkeypatch, connect_server)
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    seed, batch = batches(2, seed=37)
    cross_partition_table(warehouse, [seed])
    source = tmp_path / "batch.parquet"
    batch.to_parquet(source, index=False)
    with ProcessWatch(monkeypatch) as watch:
        run, states, xcoms = run_dag(compact_dag, conf={"source": str(source)})
    assert run.state == "success", states
    steps = [cmd for cmd in watch.seen.values() if "airflow_paimon.job_env.step" in cmd]
    assert steps and all(connect_server["token"] not in cmd for cmd in watch.seen.values()), watch.seen
    assert not [cmd for cmd in watch.seen.values() if "java" in cmd.split(" ")[0]], watch.seen  # no spark-submit
    assert xcoms["assign_and_write"]["rows_in"] == len(batch)
    assert xcoms["commit"]["snapshot_id"] == 2 and xcoms["compact"]["snapshot_id"] == 3
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert([seed, batch], "id"), "id")


def test_parallelism_of_a_connect_session_is_the_servers(connect_server):
    session = connect(connect_server["url"])
    try:
        assert default_parallelism(session) == 2  # local[2]
        session.conf.set("spark.sql.leafNodeDefaultParallelism", "3")
        assert default_parallelism(session) == 3  # what Spark plans a source with
    finally:
        session.stop()


ARROW, EIGHT_MB = "spark.sql.execution.arrow.maxBytesPerBatch", str(8 * 2**20)


@pytest.mark.parametrize("spec_partitions, conf, expected, arrow_bytes", [
    (None, {}, "2", EIGHT_MB),  # the server's cores (local[2])
    (None, {"spark.sql.shuffle.partitions": "3", ARROW: "1000"}, "3", "1000"),  # the operator's spark_conf
    (5, {"spark.sql.shuffle.partitions": "3"}, "5", EIGHT_MB),  # the operator's shuffle_partitions
])
def test_session_conf_of_a_job_session(connect_server, spec_partitions, conf, expected, arrow_bytes):
    from airflow_paimon.engine.specs import JobSpec
    from airflow_paimon.spark.job import JobRun, job_running, spark_session

    spec = JobSpec(catalog_options={}, table="db.t", shuffle_partitions=spec_partitions)
    with job_running(JobRun(None, remote=connect_server["url"], conf=conf)):
        session = spark_session(spec, "test")
        assert session.conf.get("spark.sql.shuffle.partitions") == expected
        assert session.conf.get(ARROW) == arrow_bytes


def test_on_kill_interrupts_the_connect_job_and_commits_nothing(airflow_home, warehouse, monkeypatch, connect_server,
                                                                 tmp_path):
    use_warehouse(monkeypatch, warehouse)
    use_connect(monkeypatch, connect_server)
    cross_partition_table(warehouse, [pd.DataFrame({"id": [1, 2], "dt": ["a", "b"], "v": [1.0, 2.0]})])
    hook = PaimonHook()
    op = PaimonAssignAndWriteOperator(task_id="assign_and_write", table="db.t", source={"query": SLOW_SOURCE})
    session = connect(connect_server["url"])
    try:
        index = run_bootstrap(session, BootstrapSpec(catalog_options=hook.catalog_options(), table="db.t", shards=2,
                                                     index_root=hook.index_root()))
    finally:
        session.stop()
    result_uri = str(tmp_path / "result.json")
    thread, outcome = slow_write(op, hook, index.to_dict(), result_uri)
    assert wait_for(lambda: getattr(op._backend, "job_run", None) is not None and op._backend.job_run.sessions,
                    60)
    time.sleep(5)  # the source's tasks sleep on the server's two cores
    assert outcome == {}
    op.on_kill()
    thread.join(60)
    assert not thread.is_alive() and isinstance(outcome.get("result"), AirflowException), outcome
    assert "JobKilled: the task was killed" in str(outcome["result"]), outcome
    # the sleeping tasks are gone: the server's two cores run a new job at once
    probe = connect(connect_server["url"])
    try:
        started = time.monotonic()
        assert probe.range(0, 100, 1, 2).count() == 100
        assert time.monotonic() - started < 30
    finally:
        probe.stop()
    table = get_table({"warehouse": warehouse}, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]
    staging = os.path.join(hook.staging_root(), "db.t")
    assert not any(STAGED_FILE in files for _, _, files in os.walk(staging))


def _process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it."""
    out = subprocess.run(["ps", "-o", "pid=,ppid=", "-e"], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        p, pp = map(int, line.split())
        children.setdefault(pp, []).append(p)
    tree, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        tree.append(p)
        frontier.extend(children.get(p, []))
    return tree


def test_the_token_is_in_no_command_line_and_a_client_without_it_is_refused(connect_server):
    token = connect_server["token"]
    assert len(token) >= 32 and oct(connect_server["token_file"].stat().st_mode & 0o777) == "0o600"
    processes = {}
    for p in _process_tree(connect_server["pid"]):
        try:
            processes[p] = (open(f"/proc/{p}/cmdline", "rb").read(), open(f"/proc/{p}/environ", "rb").read())
        except OSError:
            continue
    jvms = [p for p, (cmdline, _) in processes.items() if b"SparkConnectServer" in cmdline]
    assert jvms and any(cmdline.split(b"\0")[0].endswith(b"java") for p, (cmdline, _) in processes.items()
                        if p in jvms), processes
    assert not [p for p, (cmdline, _) in processes.items() if token.encode() in cmdline]
    assert all(f"{TOKEN_ENV}={token}".encode() in processes[p][1].split(b"\0") for p in jvms)  # its environment
    assert token not in connect_server["log"].read_text()

    session = connect(connect_server["url"])  # the right token: served
    try:
        assert session.range(0, 10).count() == 10
    finally:
        session.stop()
        classic_again()
    port = connect_server["port"]
    for url in (f"sc://localhost:{port}/;token=not-{token}", f"sc://127.0.0.1:{port}"):
        with pytest.raises(Exception) as refused:
            connect(url).range(0, 10).count()
        classic_again()
        assert "UNAUTHENTICATED" in str(refused.value) or "Invalid authentication token" in str(refused.value), url


def test_the_token_comes_from_the_environment_and_never_from_the_command_line(tmp_path, monkeypatch):
    from airflow_paimon.spark.connect_server import main, server_command

    with pytest.raises(SystemExit):
        main(["--conf", "spark.connect.authenticate.token=x"])
    with pytest.raises(ValueError, match=TOKEN_ENV):
        server_command(conf={"spark.connect.authenticate.token": "x"})
    monkeypatch.setenv(TOKEN_ENV, "from-the-env")
    argv, env = server_command(token=None)
    assert TOKEN_ENV not in env  # --no-token: a token of the launcher's environment is not passed on
    argv, env = server_command(token="t0k")
    assert env[TOKEN_ENV] == "t0k" and not any("t0k" in a for a in argv)
