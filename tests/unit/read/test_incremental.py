"""Incremental read (diff between two snapshots) of the engine vs a pandas diff of two full pypaimon reads."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.read.incremental import diff_partition, plan_incremental, snapshot_range
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from incremental_oracle import expected_diff, normalised
from local_runner import bootstrap, upsert

CROSS = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"], ["s", "STRING"]],
                             "primary_keys": ["id"], "partition_keys": ["dt"],
                             "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "40"}})
FIXED = TableSpec.from_dict({**CROSS.to_dict(), "primary_keys": ["dt", "id"], "options": {"bucket": "3"}})


def batches(seed=5):
    """A: 300 keys; B: updates, identical rewrites, moves, deletes, new keys; C: more of the same."""
    rng = np.random.default_rng(seed)
    out, kinds = [], []
    for n, key_range in ((300, 300), (200, 420), (150, 500)):
        ids = rng.choice(key_range, n, replace=False)
        vals = rng.integers(0, 4, n).astype(float)  # few values: many rewrites leave a row as it was
        s = np.where(rng.random(n) < 0.2, None, rng.choice(["x", "y"], n)).astype(object)
        out.append(pd.DataFrame({"id": ids, "dt": rng.choice(["a", "b", "c"], n), "v": vals, "s": s}))
        kinds.append(np.where(rng.random(n) < (0.1 if out[:-1] else 0), 3, 0).astype(np.int8))  # -D
    return out, kinds


def run_incremental(table, start, end):
    start, end = snapshot_range(table, "db.t", start, end)
    parts = [diff_partition(table, work) for work in plan_incremental(table, start, end)]
    return pa.concat_tables(parts).to_pandas() if parts else None


@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
def test_incremental_equals_the_diff_of_two_full_reads(warehouse, spec):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    frames, kinds = batches()
    for i, (frame, k) in enumerate(zip(frames, kinds)):
        ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
        upsert(ctx, pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}", row_kinds=k)
    table = get_table(opts, "db.t")
    identity = ["dt", "id"]
    for start, end in ((0, 1), (1, 2), (1, 3), (2, 3), (0, 3)):
        expected = expected_diff(table, start, end, identity)
        actual = normalised(run_incremental(table, start, end)[list(expected.columns)], identity)
        assert {"+I", "+U", "-D"} <= set(expected.row_kind) or start == 0, (start, end)
        assert not actual.duplicated(identity).any()
        pd.testing.assert_frame_equal(actual, expected, check_dtype=False)


def test_unchanged_buckets_are_not_read_and_bad_ranges_are_refused(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", FIXED)
    frame = pd.DataFrame({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [1.0, 2.0, 3.0], "s": ["x", None, "y"]})
    for i, f in enumerate((frame, frame.iloc[:1].assign(v=9.0))):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 1),
               pa.Table.from_pandas(f, schema=FIXED.arrow_schema(), preserve_index=False), f"r{i}")
    table = get_table(opts, "db.t")
    work = plan_incremental(table, 1, 2)
    # dt=b not touched: not planned, not read
    assert [(w.partition, [(len(b), len(a)) for _, b, a, *_ in w.buckets]) for w in work] == [(("a",), [(1, 2)])]
    assert run_incremental(table, 1, 2).to_dict("records") == [
        {"id": 1, "dt": "a", "v": 9.0, "s": "x", "row_kind": "+U"}]
    assert run_incremental(table, 2, 2) is None
    with pytest.raises(ValidationError, match=r"db\.t.*snapshot 7 does not exist"):
        snapshot_range(table, "db.t", 1, 7)
    with pytest.raises(ValidationError, match=r"db\.t.*need 0 <= start <= end"):
        snapshot_range(table, "db.t", 2, 1)


def test_a_start_past_a_rollback_reads_from_the_snapshot_rolled_back_to(warehouse, caplog):
    """A consumer read (1, 2]; the table is rolled back to 1 and two new commits reuse the ids 2 and 3. Going on
    from id 2 would skip the new snapshot 2; with the start's identity the read starts at 1, says so, and reads
    neither the rolled-back rows again nor them as deleted."""
    from airflow_paimon.engine.read.incremental import start_after
    from airflow_paimon.engine.jobs.progress import describe_incremental_read
    from airflow_paimon.engine.jobs.specs import IncrementalReadResult
    from airflow_paimon.engine.maintenance.rollback import rollback
    from airflow_paimon.engine.snapshot.snapshots import cursor_at

    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", FIXED)

    def write(frame, run_id):
        upsert(bootstrap(opts, "db.t", index_root, 1),
               pa.Table.from_pandas(frame, schema=FIXED.arrow_schema(), preserve_index=False), run_id)

    base = pd.DataFrame({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [1.0, 2.0, 3.0], "s": ["x", None, "y"]})
    write(base, "r0")  # 1
    write(base.iloc[:2].assign(v=5.0), "r1")  # 2: read by the consumer, then rolled back
    cursor = cursor_at(get_table(opts, "db.t"), 2)
    assert rollback(opts, "db.t", index_root, to_snapshot=1)["deleted_snapshots"] == [2]
    write(base.iloc[2:].assign(v=7.0), "r2")  # 2 again: another snapshot
    write(pd.DataFrame({"id": [4], "dt": ["b"], "v": [8.0], "s": ["z"]}), "r3")  # 3
    table = get_table(opts, "db.t")

    assert start_after(table, "db.t", 2, None) == (2, None)  # a bare id cannot tell
    with caplog.at_level("WARNING"):
        start, rolled_back_from = start_after(table, "db.t", 2, cursor)
    assert (start, rolled_back_from) == (1, 2)
    assert "table db.t was rolled back to snapshot 1 below the cursor 2; resuming from 1" in caplog.text
    identity = ["dt", "id"]
    expected = expected_diff(table, 1, 3, identity)
    actual = normalised(run_incremental(table, start, 3)[list(expected.columns)], identity)
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)
    assert sorted(actual.id) == [3, 4] and 5.0 not in set(actual.v)  # the rolled-back v=5.0 rows: not read
    assert start_after(table, "db.t", 3, cursor_at(table, 3)) == (3, None)  # a cursor the table still has
    # the task's progress line says it too (the Spark driver's warning may not reach the task log)
    line = describe_incremental_read(IncrementalReadResult(
        table="db.t", start_snapshot_id=start, end_snapshot_id=3, target="t", row_kind_column="row_kind",
        changed_partitions=1, files=1, rows=2, inserts=1, updates=1, deletes=0, rolled_back_from=rolled_back_from))
    assert line.startswith("snapshots (1, 3] (the table was rolled back below the start 2: read from 1), diff")
