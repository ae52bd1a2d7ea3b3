"""Days land in logical-date order whatever order their runs commit in (engine/commit/ordering.py): a run leaves out
the keys runs of a later logical date wrote, so an older day never replaces, nor brings back, a newer day's key.
Each table is read back against the pandas oracle applied in logical-date order, no key twice."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.properties import AS_OF, RunClock
from airflow_paimon.engine.table import TableSpec, get_or_create_table, get_table
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
    from airflow_paimon.engine.specs import CommitSpec

    spec = CommitSpec.after(written, catalog_options=opts, table="db.t")
    committed = in_process("commit", spec)
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
