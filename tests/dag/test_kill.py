"""Killing the Airflow task kills its Spark job: no spark-submit JVM or Python worker of it is left, and
nothing is committed."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest
from airflow.exceptions import AirflowException

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.files.layout import STAGED_FILE
from airflow_paimon.engine.table.table import get_table
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator
from dag.dagrun import run_dag, use_warehouse

pytestmark = [pytest.mark.dag, pytest.mark.spark]

MARKER = "AIRFLOW_PAIMON_KILL_TEST"
# One task per row sleeps for ten minutes: the job is running, far from done, when the task is killed.
SLOW_SOURCE = ("SELECT id, 'a' AS dt, CAST(id AS DOUBLE) AS v FROM range(0, 8, 1, 2) "
               "WHERE reflect('java.lang.Thread', 'sleep', 600000L) IS NULL")


def processes_with(marker: str) -> dict[int, str]:
    """pid -> command line of every process whose environment carries ``marker`` (inherited from the test:
    spark-submit's JVM, the Python driver, the Python daemon and its workers)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                found[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # gone, or not ours
            continue
    return found


def wait_for(condition, timeout: float, step: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return condition()


def slow_write(op, hook, bootstrap: dict, result_uri: str) -> tuple[threading.Thread, dict]:
    """``op._submit`` of an assign-and-write of SLOW_SOURCE in a thread, as the task would run it: (the thread,
    its outcome: ``{"result": "finished" or the AirflowException}`` once it ends)."""
    spec = {"catalog_options": hook.catalog_options(), "table": "db.t", "source": {"query": SLOW_SOURCE},
            "base_snapshot_id": bootstrap["base_snapshot_id"], "index_uri": bootstrap["index_uri"],
            "shards": bootstrap["shards"], "staging_root": hook.staging_root(), "dag_id": "kill_test", "run_id": "r1",
            "row_kind_column": None}
    outcome = {}

    def submit():
        try:
            op._submit(spec, result_uri)
            outcome["result"] = "finished"
        except AirflowException as e:
            outcome["result"] = e

    task = threading.Thread(target=submit, daemon=True)
    task.start()
    return task, outcome


def test_on_kill_stops_the_spark_job_and_commits_nothing(airflow_home, warehouse, monkeypatch, tmp_path):
    use_warehouse(monkeypatch, warehouse)
    good = tmp_path / "seed.parquet"
    pd.DataFrame({"id": [1, 2], "dt": ["a", "b"], "v": [1.0, 2.0]}).to_parquet(good, index=False)
    from paimon_test_dags import seed

    run, _, xcoms = run_dag(seed, conf={"source": str(good)})
    assert run.state == "success"
    bootstrap = xcoms["bootstrap_index"]

    marker = f"{uuid.uuid4().hex}"
    monkeypatch.setenv(MARKER, marker)  # inherited by everything the submit starts
    hook = PaimonHook()
    op = PaimonAssignAndWriteOperator(task_id="assign_and_write", table="db.t", source={"query": SLOW_SOURCE})
    result_uri = str(tmp_path / "result.json")
    task, outcome = slow_write(op, hook, bootstrap, result_uri)
    try:
        # spark-submit's JVM and the job's Python driver are up; a few seconds on, the session has started and
        # the first stage sleeps in its tasks (the source's reflect call; no Python worker is needed for it)
        def job_running():
            running = list(processes_with(marker).values())
            return (any("SparkSubmit" in c for c in running)
                    and any("assign_and_write.py" in c for c in running)) and running
        assert wait_for(job_running, 120), processes_with(marker)
        time.sleep(10)
        assert outcome == {} and job_running(), outcome
        killed_at = time.monotonic()
        op.on_kill()
        task.join(60)
    finally:  # a failing test must not leave a ten-minute job behind
        for pid in processes_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert not task.is_alive()
    assert isinstance(outcome.get("result"), AirflowException), outcome
    left = wait_for(lambda: not processes_with(marker), 30) or processes_with(marker)
    assert left is True, f"Spark processes left after on_kill: { {p: c[:300] for p, c in left.items()} }"
    print(f"on_kill to no process left: {time.monotonic() - killed_at:.1f} s")

    table = get_table({"warehouse": warehouse}, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]
    staging = Path(hook.staging_root()) / "db.t"
    assert not [p for p in staging.rglob(STAGED_FILE)] if staging.exists() else True
    assert not storage.exists(result_uri) or "error" in storage.read_bytes(result_uri).decode()
