"""Backfills, Clears and concurrent writers as Airflow users run them, on a real scheduler (PostgreSQL, LocalExecutor,
the jobs on a Spark Connect server; one fixture for the whole module): every run ends ``success`` with no manual
step (or is refused as documented), and the table equals the oracle that applies the runs in the order of their
clocks, whatever order they committed in; no key twice.

- Three backfills through ``POST /api/v2/backfills`` at once, each over 4 days into a table of its own: forwards with
  ``max_active_runs`` 1, forwards with 3 (runs race: a commit that finds another day's commit in its way goes on
  top of it or writes its batch again), and backwards (every day commits before the day it follows).
- Two DAGs upserting one table, 10 rounds, each round's two runs made to stage from the same base: one commit of
  each round always meets the other's, and both succeed.
- A daily upsert into a deletion-vector table beside a compaction DAG whose full compaction commits between the
  upsert's write and its commit: the upsert writes its batch again and succeeds.
- A Clear of a finished run, through the REST API, after fixing its source: the corrected day replaces the first
  (a deduplicate table), once; clearing only a failed commit task commits what the run staged; a Clear of a run on
  an aggregation table after its snapshot expired is refused (``reprocess_on_clear`` "upsert") or writes nothing
  ("never"): each day counted once (its commit record, engine/commit/record.py).
- The clock runs write by (operators/clock.py), under timetables whose logical date is not when the data is as of:
  a manual run, then the scheduled run of a data-interval timetable for the same day; an hourly DAG and a daily
  reconciliation DAG on one table. The newer data wins, and the table equals the oracle applying the runs in the
  order of their as-of instants."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pendulum
import pytest

from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.scheduler, pytest.mark.dag]

DAG_FILES = [Path(__file__).parent / "dags" / "paimon_backfill_dags.py",
             Path(__file__).parent / "dags" / "paimon_clear_dags.py"]
SPARK = "connect"  # the scheduler fixture's Spark: one Connect server, no spark-submit per job
PARALLELISM = 6
FIRST = pendulum.datetime(2026, 3, 1, tz="UTC")
DAYS = [FIRST.add(days=n) for n in range(4)]
KEYS = 24  # ids 0..23: each day writes 10 of them, so days overwrite and delete each other's keys


def day_batch(rng, n: int) -> pd.DataFrame:
    """Day ``n``: 10 keys, each in one of 3 partitions (keys move between days), about one in six deleted."""
    ids = np.sort(rng.choice(KEYS, 10, replace=False))
    return pd.DataFrame({"id": ids, "dt": [f"p{x}" for x in rng.integers(0, 3, 10)],
                         "v": np.round(n + rng.random(10), 4),
                         "op": np.where(rng.random(10) < 0.17, "-D", "+I")})


def write_days(folder: Path, seed: int) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    batches = []
    for n, day in enumerate(DAYS):
        batch = day_batch(rng, n)
        batch.to_parquet(folder / f"{day.to_date_string()}.parquet", index=False)
        batches.append(batch)
    return batches


def in_logical_order(batches: list[pd.DataFrame]) -> pd.DataFrame:
    return expected_upsert(batches, "id", row_kind="op")


BACKFILLS = {"daily_forward": {"max_active_runs": 1}, "daily_wide": {"max_active_runs": 3},
             "daily_backwards": {"max_active_runs": 1, "run_backwards": True}}


def test_backfills_forwards_wide_and_backwards_land_every_day_once_in_logical_date_order(scheduler):
    print(f"scheduler fixture up in {scheduler.started_in}")
    airflow = scheduler
    batches = {}
    for seed, dag_id in enumerate(BACKFILLS):
        airflow.wait_for_dag(dag_id)
        batches[dag_id] = write_days(airflow.sources / dag_id, seed)
    backfills = {dag_id: airflow.backfill(dag_id, DAYS[0].isoformat(), DAYS[-1].isoformat(),
                                          conf={"sources": str(airflow.sources)}, **how)
                 for dag_id, how in BACKFILLS.items()}
    for dag_id, backfill_id in backfills.items():
        runs = airflow.wait_backfill(backfill_id, dag_id, len(DAYS), timeout=900)
        assert [r["state"] for r in runs] == ["success"] * len(DAYS), (dag_id, runs, airflow.diagnostics(dag_id))
        assert [pendulum.parse(r["logical_date"]) for r in runs] == DAYS
        table = airflow.table(f"db.{dag_id}")
        assert_table_equals(table, in_logical_order(batches[dag_id]), "id")
        commits = {r["dag_run_id"]: airflow.xcom(dag_id, r["dag_run_id"], "commit") for r in runs}
        writes = {r["dag_run_id"]: airflow.xcom(dag_id, r["dag_run_id"], "assign_and_write") for r in runs}
        order = [commits[r["dag_run_id"]]["snapshot_id"] for r in runs]  # by logical date
        left_out = sum(w["superseded_keys"] for w in writes.values())
        healed = sum(c["rewrites"] for c in commits.values()) + sum(bool(c["rebased_over"]) for c in commits.values())
        print(f"{dag_id}: snapshots by logical date {order}, keys left out for later days {left_out}, "
              f"commits healed {healed}")
        if dag_id == "daily_backwards":
            assert order == sorted(order, reverse=True), order  # each day committed before the one it follows
            assert left_out > 0, writes  # older days met keys of newer ones: left out, or they would have won
        if dag_id == "daily_forward":
            assert order == sorted(order) and left_out == 0 and healed == 0, (order, commits)


ROUNDS = 5


def test_two_dags_upserting_one_table_both_always_succeed(scheduler, tmp_path):
    """Each round one commit meets the other's (the same keys): 5 rounds, as 10 did before, show both succeed."""
    airflow = scheduler
    for dag_id in ("race_a", "race_b"):
        airflow.wait_for_dag(dag_id)
    rng = np.random.default_rng(42)
    applied, rewrites = [], 0
    for r in range(ROUNDS):
        barrier = tmp_path / f"round-{r}"
        barrier.mkdir()
        runs, batches = {}, {}
        for i, dag_id in enumerate(("race_a", "race_b")):
            batch = day_batch(rng, r)
            batch.loc[batch.index[:3], "id"] = [100 + r * 3, 101 + r * 3, 102 + r * 3]  # keys both write this round
            source = airflow.sources / f"{dag_id}-{r}.parquet"
            batch.to_parquet(source, index=False)
            # race_b's run is an hour later than race_a's: where they write the same key, race_b's row wins
            when = FIRST.add(days=r, hours=i).isoformat()
            runs[dag_id] = airflow.trigger(dag_id, {"source": str(source), "barrier": str(barrier)}, when)
            batches[dag_id] = batch
        for dag_id, run_id in runs.items():
            state, tasks = airflow.wait_finished(dag_id, run_id, timeout=300)
            assert state == "success", (r, dag_id, tasks, airflow.diagnostics(dag_id, run_id))
            committed = airflow.xcom(dag_id, run_id, "commit")
            rewrites += committed["rewrites"]
        applied += [batches["race_a"], batches["race_b"]]
        assert_table_equals(airflow.table("db.raced"), in_logical_order(applied), "id")
    print(f"{ROUNDS} rounds, {rewrites} commits written again")
    assert rewrites >= ROUNDS, "each round one commit meets the other's (the same keys): it writes its batch again"


def test_a_daily_upsert_beside_a_compaction_dag_always_succeeds(scheduler, tmp_path):
    """Deletion vectors: each round the compaction commits between the upsert's write and its commit."""
    airflow = scheduler
    for dag_id in ("daily_vectors", "compaction"):
        airflow.wait_for_dag(dag_id)
    rng = np.random.default_rng(7)
    applied, rewrites, compactions = [], 0, 0
    for r in range(4):
        barrier = tmp_path / f"compaction-round-{r}"
        barrier.mkdir()
        batch = day_batch(rng, r)
        source = airflow.sources / f"vectors-{r}.parquet"
        batch.to_parquet(source, index=False)
        when = FIRST.add(days=r).isoformat()
        write_run = airflow.trigger("daily_vectors", {"source": str(source), "barrier": str(barrier)}, when)
        compaction_run = airflow.trigger("compaction", {"barrier": str(barrier)}, when)
        for dag_id, run_id in (("compaction", compaction_run), ("daily_vectors", write_run)):
            state, tasks = airflow.wait_finished(dag_id, run_id, timeout=300)
            assert state == "success", (r, dag_id, tasks, airflow.diagnostics(dag_id, run_id))
        committed = airflow.xcom("daily_vectors", write_run, "commit")
        compacted = airflow.xcom("compaction", compaction_run, "compact")["compacted_buckets"] > 0
        # a COMPACT snapshot between the write and its commit: the write was written again, once
        assert committed["rewrites"] == int(compacted), (r, committed, compacted)
        rewrites, compactions = rewrites + committed["rewrites"], compactions + compacted
        applied.append(batch)
        assert_table_equals(airflow.table("db.vectors"), in_logical_order(applied), "id")
    print(f"4 rounds: {compactions} compactions in the way, {rewrites} writes written again")
    assert compactions >= 1


def _succeeds(airflow, dag_id: str, run_id: str) -> None:
    state, tasks = airflow.wait_finished(dag_id, run_id, timeout=420)
    assert state == "success", (dag_id, run_id, tasks, airflow.diagnostics(dag_id, run_id))


def _scheduled_runs(airflow, dag_id: str, count: int) -> list[dict]:
    """The DAG's ``count`` scheduled runs, once the scheduler made them (oldest logical date first)."""
    return airflow.wait_for(f"{count} scheduled runs of {dag_id}", lambda: (
        runs if len(runs := [r for r in airflow.runs(dag_id) if r["run_type"] == "scheduled"]) == count else None),
        120, dag_id)


def _clock_of(table, snapshot_id: int):
    from airflow_paimon.engine.commit.properties import RunClock

    return RunClock.of_snapshot(table.snapshot_manager().get_snapshot_by_id(snapshot_id))


def test_a_manual_run_then_the_scheduled_run_of_its_day_the_scheduled_data_wins(scheduler):
    """Case A: ``interval_daily`` (a data-interval timetable) is scheduled for 2026-01-01: logical date 00:00, its
    data the whole day, as of 2026-01-02 00:00. A run triggered by hand without a logical date at 15:00 that day
    sets key 3; then the scheduled run writes keys 1-5. As of 15:00 against as of midnight: the scheduled run's
    rows win, every key."""
    airflow, dag_id = scheduler, "interval_daily"
    airflow.wait_for_dag(dag_id)
    scheduled_run = _scheduled_runs(airflow, dag_id, 1)[0]  # waits for its source
    manual = pd.DataFrame({"id": [3], "dt": ["p0"], "v": [2.0], "op": ["+I"]})
    manual_source = airflow.sources / "interval_daily-manual.parquet"
    manual.to_parquet(manual_source, index=False)
    manual_run = airflow.call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {
        "logical_date": None, "run_after": "2026-01-01T15:00:00Z",
        "conf": {"source": str(manual_source)}})["dag_run_id"]
    _succeeds(airflow, dag_id, manual_run)
    day = pd.DataFrame({"id": [1, 2, 3, 4, 5], "dt": ["p0", "p1", "p1", "p2", "p0"], "v": [3.0] * 5, "op": ["+I"] * 5})
    (airflow.sources / dag_id).mkdir()
    day.to_parquet(airflow.sources / dag_id / "2026-01-01.parquet", index=False)
    _succeeds(airflow, dag_id, scheduled_run["dag_run_id"])

    table = airflow.table(f"db.{dag_id}")
    assert_table_equals(table, in_logical_order([manual, day]), "id")  # key 3 = 3.0: the scheduled run's
    clocks = {run_id: _clock_of(table, airflow.xcom(dag_id, run_id, "commit")["snapshot_id"])
              for run_id in (manual_run, scheduled_run["dag_run_id"])}
    assert (clocks[manual_run].as_of_from, clocks[manual_run].run_type) == ("run_after", "manual")
    assert clocks[manual_run].as_of_ms == pendulum.datetime(2026, 1, 1, 15, tz="UTC").int_timestamp * 1000
    scheduled_clock = clocks[scheduled_run["dag_run_id"]]
    assert (scheduled_clock.as_of_from, scheduled_clock.run_type) == ("data_interval_end", "scheduled")
    assert scheduled_clock.as_of_ms == pendulum.datetime(2026, 1, 2, tz="UTC").int_timestamp * 1000


def test_an_hourly_dag_and_a_daily_reconciliation_dag_on_one_table_the_reconciliation_wins(scheduler):
    """Case B: ``hourly`` (a trigger timetable) writes 00:00, 01:00 and 02:00 of 2026-01-01 into db.two_dags; then
    ``reconcile`` (a ``DeltaDataIntervalTimetable`` of one day: logical date 00:00, as of the day's end) rewrites
    all 30 keys. Each key ends with the reconciliation's value; no hourly run was held back."""
    airflow = scheduler
    rng = np.random.default_rng(11)
    hours = []
    (airflow.sources / "hourly").mkdir()
    for h in range(3):
        ids = np.sort(rng.choice(30, 12, replace=False))
        batch = pd.DataFrame({"id": ids, "dt": [f"p{x}" for x in rng.integers(0, 3, 12)],
                              "v": np.round(h + rng.random(12), 4), "op": ["+I"] * 12})
        batch.to_parquet(airflow.sources / "hourly" / f"20260101T0{h}0000.parquet", index=False)
        hours.append(batch)
    airflow.wait_for_dag("hourly")
    hourly_runs = _scheduled_runs(airflow, "hourly", 3)
    for run in hourly_runs:
        _succeeds(airflow, "hourly", run["dag_run_id"])
    airflow.wait_for_dag("reconcile")
    reconciliation = pd.DataFrame({"id": np.arange(30), "dt": [f"p{x}" for x in rng.integers(0, 3, 30)],
                                   "v": np.round(100 + rng.random(30), 4), "op": ["+I"] * 30})
    (airflow.sources / "reconcile").mkdir()
    reconciliation.to_parquet(airflow.sources / "reconcile" / "2026-01-01.parquet", index=False)
    run_id = _scheduled_runs(airflow, "reconcile", 2)[0]["dag_run_id"]  # 2026-01-01's; 01-02's waits for its file
    _succeeds(airflow, "reconcile", run_id)

    written = airflow.xcom("reconcile", run_id, "assign_and_write")
    assert (written["superseded_keys"], written["superseded_keys_by_others"]) == (0, 0), written
    assert_table_equals(airflow.table("db.two_dags"), in_logical_order([*hours, reconciliation]), "id")


def test_an_asset_triggered_run_wins_over_an_older_run_of_another_dag_committed_after_it(scheduler):
    """Case D: an asset event queues a run of ``asset_consumer`` (as of when it was queued: now); then the scheduled
    run of ``reconcile`` for 2026-01-02 (as of 01-03 00:00, long before) writes keys 1-3 of the same table after
    it. The reconciliation leaves out keys 1 and 2, counts them apart, names the asset-triggered run in a WARNING in
    its task log; the table equals the oracle applying the runs in the order of their clocks."""
    from oracle import read_table

    airflow = scheduler
    before = read_table(airflow.table("db.two_dags")) if airflow.table("db.two_dags").snapshot_manager() \
        .get_latest_snapshot() else pd.DataFrame({"id": [], "dt": [], "v": []})
    feed = pd.DataFrame({"id": [1, 2], "dt": ["p0", "p0"], "v": [500.0, 501.0], "op": ["+I", "+I"]})
    (airflow.sources / "asset_consumer").mkdir()
    feed.to_parquet(airflow.sources / "asset_consumer" / "feed.parquet", index=False)
    airflow.wait_for_dag("asset_consumer")
    asset = airflow.wait_for("the asset paimon-test://feed", lambda: airflow.call(
        "GET", "/api/v2/assets?uri_pattern=paimon-test")["assets"], 60)[0]
    airflow.call("POST", "/api/v2/assets/events", {"asset_id": asset["id"]})
    consumer = airflow.wait_for("the asset-triggered run", lambda: [
        r for r in airflow.runs("asset_consumer") if r["run_type"] == "asset_triggered"], 120, "asset_consumer")[0]
    _succeeds(airflow, "asset_consumer", consumer["dag_run_id"])

    late = pd.DataFrame({"id": [1, 2, 3], "dt": ["p2", "p2", "p2"], "v": [7.0, 7.5, 8.0], "op": ["+I"] * 3})
    (airflow.sources / "reconcile").mkdir(exist_ok=True)
    late.to_parquet(airflow.sources / "reconcile" / "2026-01-02.parquet", index=False)
    airflow.wait_for_dag("reconcile")
    run_id = _scheduled_runs(airflow, "reconcile", 2)[1]["dag_run_id"]
    _succeeds(airflow, "reconcile", run_id)

    written = airflow.xcom("reconcile", run_id, "assign_and_write")
    assert (written["superseded_keys"], written["superseded_keys_by_others"]) == (0, 2), written
    [by] = written["superseded_by"]
    assert (by["dag_id"], by["run_id"], by["run_type"], by["keys"]) == (
        "asset_consumer", consumer["dag_run_id"], "asset_triggered", 2), by
    log = "".join(p.read_text(errors="replace") for p in (airflow.home / "logs" / "dag_id=reconcile").glob(
        f"run_id={run_id}/task_id=assign_and_write/*.log"))
    assert "2 key(s) left out of this run" in log and f"run {consumer['dag_run_id']} of DAG asset_consumer" in log
    assert_table_equals(airflow.table("db.two_dags"), expected_upsert(
        [feed.drop(columns="op"), late[late.id == 3].drop(columns="op")], "id", start=before), "id")


# --- Clear of a finished run ----------------------------------------------------------------------------------------

DAG_ID = "scheduler_clear"
# The day as it first arrived, and as corrected: key 5 was not that day's, key 2 moves partition, key 6 was missed
DAY = pd.DataFrame({"id": [1, 2, 3, 5], "dt": ["d1", "d1", "d2", "d3"], "v": [10.0, 20.0, 30.0, 50.0]})
FIXED = pd.DataFrame({"id": [2, 3, 6], "dt": ["d2", "d2", "d3"], "v": [21.0, 31.0, 60.0]})


def _run_to_end(airflow, run_id: str, timeout: float = 300, dag_id: str = DAG_ID) -> dict:
    state, tasks = airflow.wait_finished(dag_id, run_id, timeout)
    assert state == "success", f"run {run_id}: {state} {tasks}\n{airflow.diagnostics(dag_id, run_id)}"
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


def test_a_clear_after_the_runs_snapshot_expired_counts_the_day_once(scheduler):
    """An aggregation table (``v`` summed): a run adds {1: 5, 2: 5}; two more days land, every snapshot but the
    last expires (as PaimonExpireSnapshotsOperator with num-retained.min 1 does); then the first run is cleared.
    Its commit is found by its commit record: with reprocess_on_clear "upsert" (the default) assign-and-write
    refuses, with "never" it writes nothing; the sums stay each day's once."""
    import pyarrow as pa

    from airflow_paimon.engine.files import layout
    from airflow_paimon.engine.maintenance.expire import expire_snapshots
    from airflow_paimon.engine.options import TableOptions
    from local_runner import bootstrap, upsert
    from oracle import read_table

    airflow = scheduler
    day = pd.DataFrame({"id": [1, 2], "v": [5.0, 5.0]})
    later = [pd.DataFrame({"id": [1], "v": [1.0]}), pd.DataFrame({"id": [2, 3], "v": [2.0, 3.0]})]
    expected = pd.concat([day, *later]).groupby("id", as_index=False).v.sum()
    for dag_id, table in (("scheduler_clear_sum", "db.sums"), ("scheduler_clear_sum_never", "db.sums_never")):
        airflow.wait_for_dag(dag_id)
        source = airflow.sources / f"{dag_id}.parquet"
        day.to_parquet(source, index=False)
        run_id = airflow.trigger(dag_id, {"table": table, "source": str(source)})
        _run_to_end(airflow, run_id, dag_id=dag_id)
        opts = {"warehouse": str(airflow.warehouse)}
        paimon = airflow.table(table)
        for i, batch in enumerate(later):  # two more days, by another writer
            upsert(bootstrap(opts, table, layout.default_root(str(airflow.warehouse), "index"), 2),
                   pa.Table.from_pandas(batch, schema=pa.schema([("id", pa.int64()), ("v", pa.float64())]),
                                        preserve_index=False), run_id=f"later-{i}")
        expired = expire_snapshots(airflow.table(table), TableOptions.parse(table, {
            "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}).expire)
        committed = airflow.xcom(dag_id, run_id, "commit")["snapshot_id"]
        assert expired.earliest_snapshot_id > committed and paimon.snapshot_manager().get_snapshot_by_id(
            committed) is None  # the run's snapshot is gone

        airflow.clear(dag_id, run_id)
        state, tasks = airflow.wait_finished(dag_id, run_id)
        if dag_id == "scheduler_clear_sum":
            assert (state, tasks["assign_and_write"]) == ("failed", "failed"), tasks
            log = "".join(p.read_text(errors="replace") for p in (airflow.home / "logs" / f"dag_id={dag_id}").glob(
                "run_id=*/task_id=assign_and_write/*.log"))
            assert "reprocess_on_clear" in log and "expired since; found by its commit record" in log
        else:
            assert state == "success", (tasks, airflow.diagnostics(dag_id, run_id))
            written = airflow.xcom(dag_id, run_id, "assign_and_write")
            assert (written["generation"], written["rows_written"], written["already_committed"]) == (1, 0, True)
        got = read_table(airflow.table(table)).sort_values("id").reset_index(drop=True)
        pd.testing.assert_frame_equal(got[["id", "v"]], expected, check_dtype=False)  # each day once
