"""Runs land in the order of the instants their data is as of, whatever order they commit in
(engine/commit/ordering.py): a run leaves out the keys runs as of a later instant wrote, and the partitions they
overwrote, so older data never replaces, nor brings back, newer data; another DAG's run yielded to is a WARNING;
``write_order="commit"`` keeps Paimon's commit order. Each table is read back against the pandas oracle applied in
the rule's order, no key twice."""
import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.properties import AS_OF, RunClock
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, clock_at, in_process, stage_run, upsert, write_run
from oracle import assert_table_equals, expected_upsert

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
SHAPES = {
    "cross-partition": {"primary_keys": ["id"], "partition_keys": ["dt"],
                        "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}},
    "fixed": {"primary_keys": ["id"], "options": {"bucket": "2"}},
    "deletion-vectors": {"primary_keys": ["id"], "options": {"bucket": "2", "deletion-vectors.enabled": "true"}},
}
DAY = 86_400_000


def day(n: int, ids, seed: int) -> pd.DataFrame:
    """Day ``n``'s batch: ``ids``, each in a partition and with a value of that day."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": ids, "dt": [f"p{x}" for x in rng.integers(0, 3, len(ids))],
                         "v": np.round(rng.random(len(ids)) + n, 3)})


def started(warehouse, shape: str):
    spec = TableSpec.from_dict({"columns": COLUMNS, **SHAPES[shape]})
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", spec)
    return spec, opts, index_root


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_days_written_backwards_end_as_written_in_order(warehouse, shape):
    spec, opts, index_root = started(warehouse, shape)
    days = {n: day(n, list(range(n, n + 6)), seed=n) for n in range(1, 6)}  # each day shares keys with the next
    for n in sorted(days, reverse=True):  # a backfill run backwards: day 5 commits first
        frame = pa.Table.from_pandas(days[n], schema=spec.arrow_schema(), preserve_index=False)
        upsert(bootstrap(opts, "db.t", index_root, 2), frame, run_id=f"d{n}", clock=clock_at(n * DAY))
    table = get_table(opts, "db.t")
    assert_table_equals(table, expected_upsert([days[n] for n in sorted(days)], "id"), "id")
    stamps = [RunClock.of_snapshot(s).as_of_ms for s in table.snapshot_manager().list_snapshots()
              if s.commit_kind == "APPEND"]
    assert stamps == [n * DAY for n in (5, 4, 3, 2, 1)]


def test_an_older_day_does_not_bring_back_a_key_a_newer_day_deleted(warehouse):
    spec, opts, index_root = started(warehouse, "cross-partition")
    start = day(0, [1, 2, 3], seed=0)
    upsert(bootstrap(opts, "db.t", index_root, 2), pa.Table.from_pandas(start, schema=spec.arrow_schema(),
                                                                        preserve_index=False), run_id="d0",
           clock=clock_at(0))
    newer = start[start.id == 2]  # day 2 deletes key 2
    upsert(bootstrap(opts, "db.t", index_root, 2), pa.Table.from_pandas(newer, schema=spec.arrow_schema(),
                                                                        preserve_index=False), run_id="d2",
           row_kinds=np.array([3], np.int8), clock=clock_at(2 * DAY))
    older = day(1, [2, 3], seed=1)  # day 1, committed after day 2, writes keys 2 and 3
    written = write_run(bootstrap(opts, "db.t", index_root, 2),
                        pa.Table.from_pandas(older, schema=spec.arrow_schema(), preserve_index=False),
                        run_id="d1", clock=clock_at(1 * DAY))
    assert written.superseded_keys == 1 and written.rows_in == 1, written  # key 2 left out
    expected = expected_upsert([start, older], "id")
    assert_table_equals_after_commit(opts, written, expected[expected.id != 2])


def assert_table_equals_after_commit(opts, written, expected):
    committed = in_process("commit", stage_spec(opts, written))
    table = get_table(opts, "db.t")
    snap = table.snapshot_manager().get_snapshot_by_id(committed.snapshot_id)
    assert RunClock.of_snapshot(snap) == RunClock.from_dict(clock_at(1 * DAY))  # the run's clock, recorded
    assert snap.properties[AS_OF] == str(1 * DAY)
    assert_table_equals(table, expected.reset_index(drop=True), "id")


def test_a_run_without_a_logical_date_and_other_merge_engines_keep_commit_order(warehouse):
    spec = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"],
                                "options": {"bucket": "1", "merge-engine": "aggregation",
                                            "fields.v.aggregate-function": "sum"}})
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", spec)
    newer, older = day(2, [1, 2], seed=2), day(1, [2, 3], seed=3)
    for frame, stamp in ((newer, 2 * DAY), (older, DAY)):
        staged = stage_run(bootstrap(opts, "db.t", index_root, 2),
                           pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False),
                           run_id=f"r{stamp}", clock=clock_at(stamp))
        in_process("commit", staged)
    rows = pd.concat([newer, older]).groupby("id", as_index=False).agg({"dt": "last", "v": "sum"})
    got = get_table(opts, "db.t")
    from oracle import read_table

    table = read_table(got).sort_values("id").reset_index(drop=True)
    assert table.id.tolist() == [1, 2, 3]
    assert np.allclose(table.v, rows.sort_values("id").v)  # day 1's contribution counted, not left out


def test_a_delete_of_a_key_the_table_lacks_still_keeps_an_older_day_from_writing_it(warehouse):
    """Backwards: day 2 deletes key 9 before any day wrote it (a tombstone is written, not dropped), then day 1
    inserts key 9: in logical-date order key 9 was inserted, then deleted."""
    spec, opts, index_root = started(warehouse, "cross-partition")
    newer = pd.DataFrame({"id": [9, 1], "dt": ["p1", "p0"], "v": [9.0, 1.0]})
    committed = upsert(bootstrap(opts, "db.t", index_root, 2),
                       pa.Table.from_pandas(newer, schema=spec.arrow_schema(), preserve_index=False), run_id="d2",
                       row_kinds=np.array([3, 0], np.int8), clock=clock_at(2 * DAY))
    assert committed == (1, False)
    older = pd.DataFrame({"id": [9, 2], "dt": ["p2", "p2"], "v": [90.0, 2.0]})
    written = write_run(bootstrap(opts, "db.t", index_root, 2),
                        pa.Table.from_pandas(older, schema=spec.arrow_schema(), preserve_index=False),
                        run_id="d1", clock=clock_at(DAY))
    assert written.superseded_keys == 1 and written.rows_in == 1, written  # key 9 (deleted) left out
    assert_table_equals_after_commit(opts, written, newer[newer.id == 1].pipe(
        lambda f: pd.concat([f, older[older.id == 2]])).sort_values("id").reset_index(drop=True))


def frame_of(spec, rows: dict) -> pa.Table:
    return pa.Table.from_pandas(pd.DataFrame(rows), schema=spec.arrow_schema(), preserve_index=False)


HOUR = 3_600_000


def test_another_dags_run_as_of_a_later_instant_wins_and_the_run_yielding_to_it_warns(warehouse, caplog):
    """Case D: an asset-triggered run of DAG ``consumer`` (as of its run_after, 10:00) commits keys 7 and 8; then
    DAG ``daily``'s 09:00 run, started late, writes keys 6, 7 and 8: as of 09:00 it is older data, so it leaves
    7 and 8 out, names the run and snapshot it yielded to in a WARNING and counts them apart."""
    spec, opts, index_root = started(warehouse, "cross-partition")
    newer = {"id": [7, 8], "dt": ["p0", "p1"], "v": [70.0, 80.0]}
    consumer = clock_at(10 * HOUR, run_id="asset_triggered__10", dag_id="consumer", run_type="asset_triggered",
                        as_of_from="run_after")
    assert upsert(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, newer), run_id="c", clock=consumer) == (
        1, False)
    late = {"id": [6, 7, 8], "dt": ["p2", "p2", "p2"], "v": [6.5, 7.5, 8.5]}
    with caplog.at_level(logging.INFO, logger="airflow_paimon.engine.commit.ordering"):
        written = write_run(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, late), run_id="d",
                            clock=clock_at(9 * HOUR, run_id="scheduled__09", dag_id="daily"))
    assert (written.superseded_keys, written.superseded_keys_by_others, written.rows_in) == (0, 2, 1), written
    assert written.superseded_by == [{"snapshot_id": 1, "dag_id": "consumer", "run_id": "asset_triggered__10",
                                      "run_type": "asset_triggered", "as_of_ms": 10 * HOUR, "keys": 2}]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and all(w in warnings[0] for w in (
        "2 key(s) left out", "snapshot 1", "run asset_triggered__10", "DAG consumer", "write_order='commit'"))
    in_process("commit", stage_spec(opts, written))
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([pd.DataFrame(late), pd.DataFrame(newer)], "id"),
                        "id")


def test_write_order_commit_keeps_paimons_commit_order_and_is_not_ordered_against(warehouse):
    """The same two runs, the late one with ``write_order="commit"``: it leaves nothing out (the last commit wins);
    then a run as of an even earlier instant does not yield to it either (it took no part in the order)."""
    spec, opts, index_root = started(warehouse, "cross-partition")
    newer = {"id": [7, 8], "dt": ["p0", "p1"], "v": [70.0, 80.0]}
    upsert(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, newer), run_id="c",
           clock=clock_at(10 * HOUR, dag_id="consumer", run_type="asset_triggered"))
    late = {"id": [6, 7, 8], "dt": ["p2", "p2", "p2"], "v": [6.5, 7.5, 8.5]}
    written = write_run(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, late), run_id="d",
                        clock=clock_at(9 * HOUR, dag_id="daily", write_order="commit"))
    assert (written.superseded_keys, written.superseded_keys_by_others, written.rows_in) == (0, 0, 3), written
    in_process("commit", stage_spec(opts, written))
    table = get_table(opts, "db.t")
    assert RunClock.of_snapshot(table.snapshot_manager().get_latest_snapshot()).write_order == "commit"
    earliest = {"id": [6, 9], "dt": ["p0", "p0"], "v": [0.6, 0.9]}
    upsert(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, earliest), run_id="e",
           clock=clock_at(8 * HOUR, dag_id="daily"))  # key 6: only the commit-ordered run wrote it later
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(
        [pd.DataFrame(newer), pd.DataFrame(late), pd.DataFrame(earliest)], "id"), "id")


def test_an_older_upsert_does_not_bring_back_keys_a_later_partition_overwrite_removed(warehouse):
    """Day 3 overwrites partition p0 with keys {1, 3}; day 2, committed after it, upserts keys 2 and 4 into p0 and
    key 5 into p1: run forwards, day 3's overwrite would have replaced day 2's p0, so day 2's p0 rows are left
    out and the table holds {1, 3} in p0 and 5 in p1."""
    spec, opts, index_root = started(warehouse, "cross-partition")
    first = {"id": [1, 2, 3, 4], "dt": ["p0"] * 4, "v": [1.0, 2.0, 3.0, 4.0]}
    upsert(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, first), run_id="d0", clock=clock_at(0))
    overwrite = {"id": [1, 3], "dt": ["p0", "p0"], "v": [1.3, 3.3]}
    upsert(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, overwrite), run_id="d3", write_mode="overwrite",
           clock=clock_at(3 * DAY))
    older = {"id": [2, 4, 5], "dt": ["p0", "p0", "p1"], "v": [2.2, 4.2, 5.2]}
    written = write_run(bootstrap(opts, "db.t", index_root, 2), frame_of(spec, older), run_id="d2",
                        clock=clock_at(2 * DAY))
    assert (written.superseded_keys, written.rows_in) == (2, 1), written  # keys 2 and 4: p0 was overwritten later
    in_process("commit", stage_spec(opts, written))
    expected = pd.DataFrame({"id": [1, 3, 5], "dt": ["p0", "p0", "p1"], "v": [1.3, 3.3, 5.2]})
    assert_table_equals(get_table(opts, "db.t"), expected, "id")


def test_a_snapshot_of_an_earlier_version_is_ordered_by_its_logical_date():
    """Snapshots written before the clock was recorded carry only the logical date: that was their as-of
    instant."""
    clock = RunClock.of_properties({"airflow-paimon.logical-date": str(DAY)})
    assert (clock.as_of_ms, clock.as_of_from, clock.ordered) == (DAY, "logical_date", True)
    assert RunClock.of_properties({"other": "x"}) is None


def stage_spec(opts, written):
    from airflow_paimon.engine.jobs.specs import CommitSpec

    return CommitSpec.after(written, catalog_options=opts, table="db.t")
