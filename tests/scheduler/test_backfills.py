"""Backfills and concurrent writers as Airflow users run them, on a real scheduler (PostgreSQL, LocalExecutor, the jobs
on a Spark Connect server): every run ends ``success`` with no manual step, and the table equals the oracle that
applies the days in logical-date order, whatever order the runs committed in; no key twice.

- Three backfills through ``POST /api/v2/backfills`` at once, each over 7 days into a table of its own: forwards with
  ``max_active_runs`` 1, forwards with 3 (runs race: a commit that finds another day's commit in its way goes on
  top of it or writes its batch again), and backwards (every day commits before the day it follows).
- Two DAGs upserting one table, 10 rounds, each round's two runs made to stage from the same base: one commit of
  each round always meets the other's, and both succeed.
- A daily upsert into a deletion-vector table beside a compaction DAG whose full compaction commits between the
  upsert's write and its commit: the upsert writes its batch again and succeeds."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pendulum
import pytest

from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.scheduler, pytest.mark.dag]

DAG_FILES = [Path(__file__).parent / "dags" / "paimon_backfill_dags.py"]
SPARK = "connect"  # the scheduler fixture's Spark: one Connect server, no spark-submit per job
PARALLELISM = 6
FIRST = pendulum.datetime(2026, 3, 1, tz="UTC")
DAYS = [FIRST.add(days=n) for n in range(7)]
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


ROUNDS = 10


def test_two_dags_upserting_one_table_both_always_succeed(scheduler, tmp_path):
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
