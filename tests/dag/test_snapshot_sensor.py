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
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from structlog.testing import capture_logs

from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
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


def commit_once_logged(table, ids: list[int], log: _Lines, marker: str, delay: float = 2.0,
                       timeout: float = 300) -> threading.Thread:
    """Commit ``ids`` ``delay`` seconds after ``log`` got a line holding ``marker`` (or after ``timeout``)."""
    def commit():
        deadline = time.monotonic() + timeout
        while not any(marker in line for line in list(log.lines)) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(delay)
        commit_rows(table, ids)

    thread = threading.Thread(target=commit, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def table(airflow_home, warehouse, monkeypatch):
    use_warehouse(monkeypatch, warehouse)
    t = get_or_create_table({"warehouse": warehouse}, "db.s", SPEC)
    commit_rows(t, [1, 2])
    return t


def test_newer_snapshot_by_commit_kind(table):
    from airflow_paimon.engine.snapshot.snapshots import newer_snapshot

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


def roll_back_to_1_and_commit_twice(table, warehouse) -> None:
    """Snapshots 2 and 3 rolled back (engine/maintenance/rollback.py); two new commits reuse their ids."""
    from airflow_paimon.engine.maintenance.rollback import rollback

    assert rollback({"warehouse": warehouse}, "db.s", warehouse + "/.index", to_snapshot=1)["deleted_snapshots"] \
        == [2, 3]
    assert [commit_rows(table, [5]), commit_rows(table, [6])] == [2, 3]


def test_sensor_with_a_cursor_past_a_rollback_resumes_from_the_snapshot_rolled_back_to(table, warehouse):
    """The cursor "after 3" saw snapshot 3; after the rollback to 1 and two commits reusing 2 and 3, waiting for
    an id above 3 would skip both: the sensor fires on the new 3, after 1, and says so."""
    from airflow_paimon.sensors.paimon import PaimonSnapshotSensor

    assert [commit_rows(table, [3]), commit_rows(table, [4])] == [2, 3]
    sensor = PaimonSnapshotSensor(task_id="wait", table="db.s", after_snapshot_id=3)
    assert not sensor.poke({}).is_done
    roll_back_to_1_and_commit_twice(table, warehouse)
    with capture_logs() as logged:  # the task log (structlog)
        poked = sensor.poke({})
    assert poked.is_done
    event = poked.xcom_value
    assert (event["snapshot_id"], event["after_snapshot_id"], event["rolled_back_from"]) == (3, 1, 3)
    assert event["after_snapshot"]["snapshot_id"] == 1 and event["total_record_count"] == 4  # keys 1, 2, 5, 6
    warnings = [str(e.get("positional_args", "")) + e["event"] for e in logged if e["log_level"] == "warning"]
    assert any("table db.s was rolled back to snapshot 1 below the cursor 3; resuming from 1" in w
               for w in warnings), logged
    # the next run's cursor is this snapshot summary: the same table, nothing newer
    assert not PaimonSnapshotSensor(task_id="next", table="db.s", after_snapshot_id=event).poke({}).is_done


def test_trigger_with_a_cursor_past_a_rollback_fires_on_the_commits_after_it(table, warehouse):
    from airflow_paimon.triggers.paimon import PaimonSnapshotTrigger

    assert [commit_rows(table, [3]), commit_rows(table, [4])] == [2, 3]
    trigger = PaimonSnapshotTrigger(table="db.s", after_snapshot_id=3, poll_interval=0.2)
    trigger = PaimonSnapshotTrigger(**trigger.serialize()[1])  # as the triggerer rebuilds it

    async def first_event():
        return await anext(trigger.run())

    changer = threading.Thread(target=lambda: (time.sleep(1.0), roll_back_to_1_and_commit_twice(table, warehouse)),
                               daemon=True)
    changer.start()  # while the trigger polls after 3
    event = asyncio.run(asyncio.wait_for(first_event(), timeout=20))
    changer.join()
    snapshot = event.payload["snapshot"]
    assert event.payload["status"] == "success", event.payload
    # the new 2 or 3 (whichever had landed at the poll), never one above 3
    assert snapshot["snapshot_id"] in (2, 3) and snapshot["commit_kind"] == "APPEND"
    assert (snapshot["after_snapshot_id"], snapshot["rolled_back_from"]) == (1, 3)


def test_trigger_reports_a_missing_table(airflow_home, warehouse, monkeypatch):
    from airflow_paimon.sensors.paimon import PaimonSnapshotSensor
    from airflow_paimon.triggers.paimon import PaimonSnapshotTrigger

    use_warehouse(monkeypatch, warehouse)
    event = asyncio.run(anext(PaimonSnapshotTrigger(table="db.nope", after_snapshot_id=0).run()))
    assert event.payload["status"] == "error" and "db.nope" in event.payload["message"]
    assert event.payload["retryable"] is True  # TableNotFound: the table may be created meanwhile
    with pytest.raises(AirflowException, match="db.nope.*does not exist") as raised:
        PaimonSnapshotSensor(task_id="w", table="db.nope", deferrable=True).execute_complete(
            {}, event.payload)
    assert not isinstance(raised.value, AirflowFailException), "retried, as the trigger's error says"


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
    # lands while the sensor waits: once its trigger runs (deferred), or a while after the task started (poking),
    # however long the DAG takes to get there on a loaded machine
    writer = commit_once_logged(table, [3, 4], dag_test_log,
                                "running trigger in line" if dag_name == "deferred" else "[DAG TEST] running task")
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
