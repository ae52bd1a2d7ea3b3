"""PaimonSnapshotSensor: poke mode, and deferrable through PaimonSnapshotTrigger run by a real in-process
triggerer (dag.test runs the deferred trigger inline) while another thread commits the awaited snapshot."""
from __future__ import annotations

import asyncio
import logging
import threading
import time

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.table import TableSpec, get_or_create_table
from dag.dagrun import run_dag, use_warehouse

pytestmark = pytest.mark.dag

SPEC = TableSpec([("id", "BIGINT"), ("v", "STRING")], primary_keys=["id"], options={"bucket": "1"})


def commit_rows(table, ids: list[int], overwrite: bool = False) -> int:
    """One pypaimon batch commit (a new snapshot); its id."""
    builder = table.new_batch_write_builder()
    if overwrite:
        builder = builder.overwrite()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(pd.DataFrame({"id": ids, "v": [f"v{i}" for i in ids]}),
                                           schema=SPEC.arrow_schema(), preserve_index=False))
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    return table.snapshot_manager().get_latest_snapshot().id


def commit_later(table, ids: list[int], delay: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), commit_rows(table, ids)), daemon=True)
    thread.start()
    return thread


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def table(airflow_home, warehouse, monkeypatch):
    use_warehouse(monkeypatch, warehouse)
    t = get_or_create_table({"warehouse": warehouse}, "db.s", SPEC)
    commit_rows(t, [1, 2])
    return t


def test_newer_snapshot_by_commit_kind(table):
    from airflow_paimon.engine.snapshots import newer_snapshot

    commit_rows(table, [3], overwrite=True)  # 2: OVERWRITE
    commit_rows(table, [4])  # 3: APPEND
    assert newer_snapshot(table, "db.s", 3)[0] is None
    found, scanned = newer_snapshot(table, "db.s", 1)
    assert (found["snapshot_id"], found["commit_kind"], scanned) == (3, "APPEND", 3)
    found, scanned = newer_snapshot(table, "db.s", 1, ("OVERWRITE",))
    assert (found["snapshot_id"], found["commit_kind"], scanned) == (2, "OVERWRITE", 3)
    assert newer_snapshot(table, "db.s", 2, ("OVERWRITE", "COMPACT")) == (None, 3)


def test_trigger_waits_for_the_commit_then_sensor_completes(table):
    from airflow_paimon.sensors.paimon import PaimonSnapshotSensor
    from airflow_paimon.triggers.paimon import PaimonSnapshotTrigger

    trigger = PaimonSnapshotTrigger(table="db.s", after_snapshot_id=1, poll_interval=0.2)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_paimon.triggers.paimon.PaimonSnapshotTrigger"
    trigger = PaimonSnapshotTrigger(**kwargs)  # as the triggerer rebuilds it

    async def first_event():
        return await anext(trigger.run())

    started = time.time()
    writer = commit_later(table, [3], delay=1.5)
    event = asyncio.run(asyncio.wait_for(first_event(), timeout=60))
    writer.join()
    assert time.time() - started >= 1.5  # it waited for the commit, did not fire on snapshot 1
    assert event.payload["status"] == "success"
    assert event.payload["snapshot"]["snapshot_id"] == 2 and event.payload["snapshot"]["commit_kind"] == "APPEND"
    sensor = PaimonSnapshotSensor(task_id="wait", table="db.s", after_snapshot_id=1, deferrable=True)
    result = sensor.execute_complete({}, event.payload)
    assert (result["snapshot_id"], result["after_snapshot_id"], result["total_record_count"]) == (2, 1, 3)
    assert result["changelog_record_count"] is None  # no changelog producer: an incremental read is a diff


def test_trigger_reports_a_missing_table(airflow_home, warehouse, monkeypatch):
    from airflow_paimon.sensors.paimon import PaimonSnapshotSensor
    from airflow_paimon.triggers.paimon import PaimonSnapshotTrigger

    use_warehouse(monkeypatch, warehouse)
    event = asyncio.run(anext(PaimonSnapshotTrigger(table="db.nope", after_snapshot_id=0).run()))
    assert event.payload["status"] == "error" and "db.nope" in event.payload["message"]
    with pytest.raises(RuntimeError, match="db.nope.*does not exist"):
        PaimonSnapshotSensor(task_id="w", table="db.nope", deferrable=True).execute_complete(
            {}, event.payload)


def test_bad_commit_kind_is_refused_at_parse_time():
    from airflow_paimon.sensors.paimon import PaimonSnapshotSensor

    with pytest.raises(ValueError, match="APPENDD"):
        PaimonSnapshotSensor(task_id="w", table="db.s", commit_kinds=["APPENDD"])


@pytest.mark.parametrize("dag_name", ["poke", "deferred"])
def test_sensor_in_a_dag_run_waits_for_the_next_snapshot(table, dag_name):
    import paimon_sensor_dags

    dag = getattr(paimon_sensor_dags, dag_name)
    dag_test_log = _Lines()  # dag.test says when it hands a deferred task's trigger to its in-process triggerer
    logger = logging.getLogger("airflow.sdk.definitions.dag")
    logger.addHandler(dag_test_log)
    writer = commit_later(table, [3, 4], delay=4.0)  # lands while the sensor waits (poking or deferred)
    try:
        run, states, xcoms = run_dag(dag, conf={"table": "db.s", "after": 1})
    finally:
        logger.removeHandler(dag_test_log)
    writer.join()
    assert run.state == "success", states
    assert xcoms["wait"]["snapshot_id"] == 2 and xcoms["wait"]["after_snapshot_id"] == 1
    assert xcoms["wait"]["delta_record_count"] == 2
    deferred = any("running trigger in line" in line for line in dag_test_log.lines)
    assert deferred == (dag_name == "deferred"), dag_test_log.lines


def test_deferrable_sensor_returns_at_once_when_the_snapshot_exists(table):
    import paimon_sensor_dags

    run, states, xcoms = run_dag(paimon_sensor_dags.deferred, conf={"table": "db.s", "after": 0})
    assert run.state == "success", states
    assert xcoms["wait"]["snapshot_id"] == 1
