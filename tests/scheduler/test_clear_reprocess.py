"""Clear of a finished DAG run, on a real scheduler: the run is triggered and cleared through the REST API, as a
user does after fixing a day's source; the corrected day replaces the first one (a deduplicate table), once."""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.scheduler, pytest.mark.dag]

DAG_FILES = [Path(__file__).parent / "dags" / "paimon_clear_dags.py"]  # the scheduler fixture's DAGs folder
DAG_ID = "scheduler_clear"
# The day as it first arrived, and as corrected: key 5 was not that day's, key 2 moves partition, key 6 was missed
DAY = pd.DataFrame({"id": [1, 2, 3, 5], "dt": ["d1", "d1", "d2", "d3"], "v": [10.0, 20.0, 30.0, 50.0]})
FIXED = pd.DataFrame({"id": [2, 3, 6], "dt": ["d2", "d2", "d3"], "v": [21.0, 31.0, 60.0]})


def _run_to_end(airflow, run_id: str, timeout: float = 300) -> dict:
    state, tasks = airflow.wait_finished(DAG_ID, run_id, timeout)
    assert state == "success", f"run {run_id}: {state} {tasks}\n{airflow.diagnostics(DAG_ID, run_id)}"
    return tasks


def test_a_cleared_run_writes_its_corrected_source_again(scheduler):
    print(f"scheduler fixture up in {scheduler.started_in}")
    airflow, sources = scheduler, scheduler.sources
    airflow.wait_for_dag(DAG_ID)

    day = sources / "day.parquet"
    DAY.to_parquet(day, index=False)
    run_id = airflow.trigger(DAG_ID, {"table": "db.t", "source": str(day)})
    started = time.monotonic()
    _run_to_end(airflow, run_id)
    first_run = time.monotonic() - started
    written = airflow.xcom(DAG_ID, run_id, "assign_and_write")
    committed = airflow.xcom(DAG_ID, run_id, "commit")
    assert written["generation"] == 0 and written["reprocessed_snapshot_id"] is None, written
    assert_table_equals(airflow.table("db.t"), expected_upsert([DAY], "id"), "id")

    FIXED.to_parquet(day, index=False)  # the source corrected in place
    airflow.clear(DAG_ID, run_id)
    started = time.monotonic()
    _run_to_end(airflow, run_id)
    cleared_run = time.monotonic() - started
    print(f"first run {first_run:.1f} s, cleared run {cleared_run:.1f} s")
    rewritten = airflow.xcom(DAG_ID, run_id, "assign_and_write")
    assert rewritten["generation"] == 1, rewritten
    assert rewritten["reprocessed_snapshot_id"] == committed["snapshot_id"], (rewritten, committed)
    assert rewritten["commit_user"] != written["commit_user"] and not rewritten["already_committed"]
    again = airflow.xcom(DAG_ID, run_id, "commit")
    assert again["snapshot_id"] > committed["snapshot_id"] and not again["already_committed"], again
    # the corrected day replaced the first one: key 5 stays (an upsert does not delete what the fix left out),
    # every key of the fix has the fixed row, in its fixed partition, once
    assert_table_equals(airflow.table("db.t"), expected_upsert([DAY, FIXED], "id"), "id")


def test_clearing_only_a_failed_commit_task_commits_what_the_run_staged(scheduler):
    """The commit takes its identity from assign-and-write's XCom: cleared alone (the run's clear_number goes up),
    it commits the generation that was staged, once."""
    airflow, sources = scheduler, scheduler.sources
    airflow.wait_for_dag(DAG_ID)
    source, marker = sources / "other.parquet", sources / "fail-commit"
    DAY.to_parquet(source, index=False)
    marker.touch()
    run_id = airflow.trigger(DAG_ID, {"table": "db.u", "source": str(source), "fail_commit": str(marker)})
    state, tasks = airflow.wait_finished(DAG_ID, run_id)
    assert (state, tasks) == ("failed", {"bootstrap_index": "success", "assign_and_write": "success",
                                         "commit": "failed"}), airflow.diagnostics(DAG_ID, run_id)
    written = airflow.xcom(DAG_ID, run_id, "assign_and_write")
    assert airflow.table("db.u").snapshot_manager().get_latest_snapshot() is None  # created, nothing committed

    marker.unlink()
    airflow.clear(DAG_ID, run_id, task_ids=["commit"])
    tasks = _run_to_end(airflow, run_id)
    assert tasks == {"bootstrap_index": "success", "assign_and_write": "success", "commit": "success"}
    committed = airflow.xcom(DAG_ID, run_id, "commit")
    snapshots = airflow.table("db.u").snapshot_manager().list_snapshots()
    assert [s.id for s in snapshots] == [committed["snapshot_id"]] and not committed["already_committed"]
    assert snapshots[0].commit_user == written["commit_user"]  # generation 0's staging, committed once
    assert_table_equals(airflow.table("db.u"), expected_upsert([DAY], "id"), "id")
