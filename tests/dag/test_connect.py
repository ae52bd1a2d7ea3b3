"""Spark Connect mode end to end: a real Connect server on 127.0.0.1 (airflow_paimon/spark/connect_server.py),
the write and compaction DAG run with dag.test() on a ``spark_connect`` connection, the table read back with pypaimon
against the pandas oracle. The tasks start no process (no spark-submit, no driver JVM, no Python driver);
a killed task stops its work on the server and commits nothing."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid

import pandas as pd
import pytest
from airflow.exceptions import AirflowException

from airflow_paimon.engine.files.layout import STAGED_FILE
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.jobs.specs import BootstrapSpec
from airflow_paimon.engine.table.table import get_table
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator
from airflow_paimon.spark.bootstrap import run_bootstrap
from airflow_paimon.spark.connect import default_parallelism
from airflow_paimon.spark.connect_server import TOKEN_ENV
from compaction_tables import batches, cross_partition_table
from dag.dagrun import run_dag, use_warehouse
from dag.test_kill import SLOW_SOURCE, processes_with, slow_write, wait_for
from oracle import assert_table_equals, expected_upsert
from spark_connect import classic_again, connect, connection

pytestmark = [pytest.mark.connect, pytest.mark.dag]

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


def use_connect(monkeypatch, server: dict) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(connection(server)))


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
    # as a fresh task process (the fixture's probe set it)
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
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
    from airflow_paimon.engine.jobs.specs import JobSpec
    from airflow_paimon.spark.job_frame import JobRun, job_running, spark_session

    spec = JobSpec(catalog_options={}, table="db.t", shuffle_partitions=spec_partitions)
    with job_running(JobRun(None, remote=connect_server["url"], conf=conf)):
        session = spark_session(spec, "test")
        assert session.conf.get("spark.sql.shuffle.partitions") == expected
        assert session.conf.get(ARROW) == arrow_bytes


@pytest.mark.parametrize("session, reports", [("the job's", False), ("pyspark's default", True)])
def test_a_job_session_gets_no_progress_reports(connect_server, session, reports):
    """The server streams progress reports to a client while a query runs, and the client answers each with a
    ReleaseExecute call; a job's session asks for none. pyspark's default session shows that the query gets them."""
    from pyspark.sql import SparkSession

    from airflow_paimon.spark.connect import connect_session
    from airflow_paimon.spark.job_frame import JobRun

    if session == "the job's":
        spark = connect_session(SparkSession.builder, connect_server["url"], JobRun(None, remote=connect_server["url"]))
    else:
        spark = connect(connect_server["url"])
    stub, kinds = spark.client._stub, []
    execute = stub.ExecutePlan

    def recorded(*args, **kwargs):
        for response in execute(*args, **kwargs):
            kinds.append(response.WhichOneof("response_type"))
            yield response

    stub.ExecutePlan = recorded
    try:  # 8 tasks of 0.6 s on the server's 2 cores: 2.4 s of query, longer than the server's 2 s report interval
        rows = spark.range(0, 8, 1, 8).selectExpr("java_method('java.lang.Thread', 'sleep', 600L)").collect()
    finally:
        spark.stop()
    assert len(rows) == 8 and "result_complete" in kinds
    assert ("execution_progress" in kinds) is reports, kinds


@pytest.mark.parametrize("end", ["the job's end", "pyspark's stop"])
def test_a_jobs_end_lets_its_result_releases_finish_before_the_session_goes(connect_server, monkeypatch, caplog,
                                                                            end):
    """pyspark releases a consumed result on the server asynchronously, and its stop() releases the session before
    it waits for those calls. In a loaded task process a release still in flight failed with SESSION_CLOSED, and
    the task log showed pyspark's warning as an error (Airflow's logging enables pyspark's Connect logger). Here
    every release takes 0.3 s more, as under load: the job's end waits for them; pyspark's stop alone does not."""
    from pyspark.sql import SparkSession

    from airflow_paimon.spark.connect import connect_session
    from airflow_paimon.spark.job_frame import JobRun

    logger = logging.getLogger("pyspark.sql.connect.logging")
    monkeypatch.setattr(logger, "disabled", False)  # as Airflow's logging set-up leaves it
    run = JobRun(None, remote=connect_server["url"])
    session = connect_session(SparkSession.builder, connect_server["url"], run)
    stub = session.client._stub
    release = stub.ReleaseExecute

    def late_release(*args, **kwargs):
        time.sleep(0.3)
        return release(*args, **kwargs)

    stub.ReleaseExecute = late_release
    with caplog.at_level(logging.WARNING, logger=logger.name):
        assert session.range(1000).toArrow().num_rows == 1000
        if end == "pyspark's stop":
            session.stop()
        run.close()
        time.sleep(1)  # any release left in flight has failed by now
    failed = [r.getMessage() for r in caplog.records if "ReleaseExecute failed" in r.getMessage()]
    assert session.is_stopped
    assert (failed == []) if end == "the job's end" else failed, failed


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


def test_the_servers_python_workers_import_the_installed_pyspark(connect_server):
    """Each task's Python worker of a Connect session adds the session's directory to sys.path and invalidates the
    import caches; a zip on the path is then read again whole (spark/daemon.py prefer_installed_pyspark), so
    the workers import pyspark from the interpreter's site-packages, not Spark's pyspark.zip."""
    def worker_imports(batches):  # nested: pickled by value, the server's workers cannot import this module
        import sys
        import zipimport

        import pyarrow as pa
        import pyspark

        for _ in batches:
            pass
        zips = sorted(p for p, f in sys.path_importer_cache.items() if isinstance(f, zipimport.zipimporter))
        yield pa.RecordBatch.from_pylist([{"pyspark": pyspark.__file__, "zips": " ".join(zips)}])

    session = connect(connect_server["url"])
    try:
        rows = session.range(4, numPartitions=2).mapInArrow(worker_imports, "pyspark string, zips string").collect()
    finally:
        session.stop()
    assert len(rows) == 2
    for row in rows:
        assert ".zip" not in row.pyspark and row.pyspark.endswith("pyspark/__init__.py"), row
        assert "pyspark.zip" not in row.zips and "py4j-" not in row.zips, row
