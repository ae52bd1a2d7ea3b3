"""Dynamic partition overwrite (write_mode="overwrite") through the engine's tasks in-process: the batch's
partitions replaced, keys that moved in from other partitions leave them, exactly once, and the index the next
upsert publishes equals a full rebuild."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.overwrite import overwritten_partitions
from airflow_paimon.engine.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.commit.run import run_commit
from faults.harness import index_content
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_upsert, read_table

CROSS = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                             "primary_keys": ["id"], "partition_keys": ["dt"],
                             "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "25"}})
FIXED = TableSpec.from_dict({**CROSS.to_dict(), "primary_keys": ["dt", "id"], "options": {"bucket": "2"}})


def arrow(df, spec):
    return pa.Table.from_pandas(df, schema=spec.arrow_schema(), preserve_index=False)


def expected_overwrite(before: pd.DataFrame, batch: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Partitions of the batch replaced by the batch (last row per key wins); elsewhere the rows stay, minus
    keys the batch now holds (a key lives once in the table)."""
    batch = batch.drop_duplicates(subset=key, keep="last")
    kept = before[~before.dt.isin(batch.dt.unique())]
    kept = kept[~kept.set_index(key).index.isin(batch.set_index(key).index)]
    return pd.concat([kept, batch], ignore_index=True).sort_values(key).reset_index(drop=True)


@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
def test_overwrite_two_partitions_then_upsert(warehouse, tmp_path, spec):
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    key = list(spec.primary_keys)
    get_or_create_table(opts, "db.t", spec)
    rng = np.random.default_rng(3)
    seed = pd.DataFrame({"id": np.arange(400), "dt": rng.choice(list("abcd"), 400), "v": rng.random(400)})
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(seed, spec), "seed")
    table = get_table(opts, "db.t")
    before = read_table(table)[["id", "dt", "v"]]

    # the backfill: partitions a and b only; keys of a kept or dropped, keys moving in from c/d, new keys
    in_a = before[before.dt == "a"].id.to_numpy()[::3]
    from_c = before[before.dt == "c"].id.to_numpy()[:15]
    ids = np.concatenate([in_a, from_c, np.arange(1000, 1040), in_a[:5]])  # last 5: in-batch duplicates
    batch = pd.DataFrame({"id": ids, "dt": rng.choice(["a", "b"], len(ids)), "v": rng.random(len(ids)) + 10})
    ctx = bootstrap(opts, "db.t", index_root, 2)
    commit_spec = stage_run(ctx, arrow(batch, spec), "backfill", write_mode="overwrite")
    first = run_commit(commit_spec)
    expected = expected_overwrite(before, batch, key)
    actual = read_table(get_table(opts, "db.t"))[["id", "dt", "v"]].sort_values(key).reset_index(drop=True)
    assert not actual.duplicated(key).any()
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)
    manager = get_table(opts, "db.t").snapshot_manager()
    snap = manager.get_latest_snapshot()
    assert (snap.id, snap.commit_kind, first.already_committed) == (2, "OVERWRITE", False)
    if spec is CROSS:  # c lost the keys that moved into b/a, but was not replaced: its other rows are still there
        assert set(actual[actual.dt == "c"].id) == set(before[before.dt == "c"].id) - set(from_c)

    # a retried commit finds its snapshot: one OVERWRITE snapshot, nothing twice
    again = run_commit(commit_spec)
    assert again.snapshot_id == 2 and again.already_committed is True
    assert manager.get_latest_snapshot().id == 2

    # the next upsert: keys the overwrite removed come back as new, the index matches a full rebuild
    gone = np.setdiff1d(before[before.dt == "a"].id.to_numpy(), ids)[:10]
    upd = pd.DataFrame({"id": np.concatenate([gone, ids[:10], before[before.dt == "d"].id.to_numpy()[:10]]),
                        "dt": ["c"] * 10 + ["d"] * 10 + ["a"] * 10, "v": np.arange(30, dtype=float)})
    ctx = bootstrap(opts, "db.t", index_root, 2)  # no index was published for the OVERWRITE: rebuilt here
    upsert(ctx, arrow(upd, spec), "after")
    if spec is CROSS:
        assert_table_equals(get_table(opts, "db.t"), expected_upsert([upd], "id", start=expected), "id")
        published = index_content(ctx.index_uri, 3)
        fresh = bootstrap(opts, "db.t", str(tmp_path / "fresh"), 2)
        assert published == index_content(fresh.index_uri, 3)
    else:
        after = read_table(get_table(opts, "db.t"))[["id", "dt", "v"]]
        oracle = pd.concat([expected, upd]).drop_duplicates(key, keep="last").sort_values(key)
        pd.testing.assert_frame_equal(after.sort_values(key).reset_index(drop=True),
                                      oracle.reset_index(drop=True), check_dtype=False)


def test_only_partitions_with_live_rows_are_overwritten(warehouse):
    from pypaimon.write.commit_message import CommitMessage

    class File:
        def __init__(self, rows, deletes):
            self.row_count, self.delete_row_count = rows, deletes

    messages = [CommitMessage(partition=("a",), bucket=0, new_files=[File(3, 1)]),
                CommitMessage(partition=("c",), bucket=1, new_files=[File(2, 2)]),  # a moved key's DELETE only
                CommitMessage(partition=(None,), bucket=0, new_files=[File(1, 0)])]
    assert overwritten_partitions(messages) == [("a",), (None,)]


def test_write_mode_is_checked_before_anything_is_read(warehouse):
    from airflow_paimon.engine.shapes import shape_of
    from airflow_paimon.engine.errors import ValidationError
    from airflow_paimon.engine.write.run import check_write_mode

    opts = {"warehouse": warehouse}
    dynamic = get_or_create_table(opts, "db.dyn", TableSpec.from_dict({**FIXED.to_dict(), "options": {"bucket": "-1"}}))
    unpartitioned = get_or_create_table(opts, "db.flat", TableSpec.from_dict(
        {**CROSS.to_dict(), "partition_keys": [], "options": {"bucket": "2"}}))
    with pytest.raises(ValidationError, match=r"db\.dyn.*supported for cross-partition and fixed-bucket tables, "
                                              r"not HASH_DYNAMIC"):
        check_write_mode(dynamic, "db.dyn", shape_of(dynamic), "overwrite")
    with pytest.raises(ValidationError, match=r"db\.flat.*has none"):
        check_write_mode(unpartitioned, "db.flat", shape_of(unpartitioned), "overwrite")
    with pytest.raises(ValidationError, match=r"db\.dyn.*'replace'.*write_mode must be"):
        check_write_mode(dynamic, "db.dyn", shape_of(dynamic), "replace")
    assert check_write_mode(dynamic, "db.dyn", shape_of(dynamic), "upsert") == "upsert"


@pytest.mark.parametrize("options", [{"deletion-vectors.enabled": "true"}, {"changelog-producer": "lookup"}])
def test_overwrite_of_a_table_whose_writes_compact_level_0_is_refused_before_staging(warehouse, options):
    """Such a write's COMPACT half rewrites and marks the bucket's old files, which the OVERWRITE deletes: the
    commit would fail on every retry (it did for lookup tables), so the write is refused, nothing staged."""
    from airflow_paimon.engine.errors import ValidationError

    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**CROSS.to_dict(), "options": {"bucket": "-1", **options}})
    get_or_create_table(opts, "db.t", spec)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(pd.DataFrame({"id": [1, 2], "dt": "a", "v": 1.0}),
                                                                     spec), "r1")
    before, latest = read_table(get_table(opts, "db.t")), get_table(opts, "db.t").snapshot_manager().get_latest_snapshot()
    with pytest.raises(ValidationError, match=r"db\.t.*'overwrite'.*not implemented"):
        stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2),
                  arrow(pd.DataFrame({"id": [1], "dt": "a", "v": 2.0}), spec), "ow", write_mode="overwrite")
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == latest.id
    pd.testing.assert_frame_equal(read_table(table), before)
