"""Dynamic partition overwrite (write_mode="overwrite") through the engine's tasks in-process: the batch's
partitions replaced, keys that moved in from other partitions leave them, exactly once, and the index the next
upsert publishes equals a full rebuild."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_paimon.engine.commit.overwrite import overwritten_partitions
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.files.scan import file_path, live_entries
from airflow_paimon.engine.files.deletion_vectors import _vector_entries
from deletion_vector_tables import assert_vectors_of_live_files
from faults.harness import index_content
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_overwrite, expected_upsert, read_table

CROSS = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                             "primary_keys": ["id"], "partition_keys": ["dt"],
                             "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "25"}})
FIXED = TableSpec.from_dict({**CROSS.to_dict(), "primary_keys": ["dt", "id"], "options": {"bucket": "2"}})


def arrow(df, spec):
    return pa.Table.from_pandas(df, schema=spec.arrow_schema(), preserve_index=False)


# Tables whose writes compact level 0: their buckets with live rows are written ignoring the old files, the
# replaced partitions' deletion vectors dropped, and the COMPACT snapshot of the same commit lifts level 0
LEVEL_0_COMPACTED = {"plain": {}, "deletion-vectors": {"deletion-vectors.enabled": "true"},
                     "lookup": {"changelog-producer": "lookup"}}


@pytest.mark.parametrize("mode", LEVEL_0_COMPACTED)
@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
def test_overwrite_two_partitions_then_upsert(warehouse, tmp_path, spec, mode):
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    spec = TableSpec.from_dict({**spec.to_dict(), "options": {**spec.options, **LEVEL_0_COMPACTED[mode]}})
    key = list(spec.primary_keys)
    get_or_create_table(opts, "db.t", spec)
    rng = np.random.default_rng(3)
    seed = pd.DataFrame({"id": np.arange(400), "dt": rng.choice(list("abcd"), 400), "v": rng.random(400)})
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(seed, spec), "seed")
    # updates in place: a deletion-vector table gets vectors in every partition
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(seed.iloc[::4].assign(v=-1.0), spec), "update")
    table = get_table(opts, "db.t")
    before = read_table(table)[["id", "dt", "v"]]
    if mode == "deletion-vectors":
        assert len(_vector_entries(table, table.snapshot_manager().get_latest_snapshot().index_manifest)) >= 4
    base = table.snapshot_manager().get_latest_snapshot().id

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
    kinds = [manager.get_snapshot_by_id(i).commit_kind for i in range(base + 1, manager.get_latest_snapshot().id + 1)]
    assert kinds == (["OVERWRITE"] if mode == "plain" else ["OVERWRITE", "COMPACT"])
    assert (first.snapshot_id, first.already_committed) == (base + len(kinds), False)
    # readers of such tables skip level 0: none is left, and Paimon's overwrite commits no changelog
    if mode != "plain":
        latest = manager.get_latest_snapshot()
        assert all(e.file.level > 0 for e in live_entries(get_table(opts, "db.t"), latest))
        assert all(manager.get_snapshot_by_id(i).changelog_manifest_list is None
                   for i in range(base + 1, latest.id + 1))
        assert_vectors_of_live_files(get_table(opts, "db.t"), latest)
    if spec.primary_keys == ["id"]:  # c lost the keys that moved into b/a, but was not replaced: its other rows stay
        assert set(actual[actual.dt == "c"].id) == set(before[before.dt == "c"].id) - set(from_c)

    # a retried commit finds its snapshot: nothing twice
    again = run_commit(commit_spec)
    assert again.snapshot_id == first.snapshot_id and again.already_committed is True
    assert manager.get_latest_snapshot().id == first.snapshot_id

    # the next upsert: keys the overwrite removed come back as new, the index matches a full rebuild
    gone = np.setdiff1d(before[before.dt == "a"].id.to_numpy(), ids)[:10]
    upd = pd.DataFrame({"id": np.concatenate([gone, ids[:10], before[before.dt == "d"].id.to_numpy()[:10]]),
                        "dt": ["c"] * 10 + ["d"] * 10 + ["a"] * 10, "v": np.arange(30, dtype=float)})
    ctx = bootstrap(opts, "db.t", index_root, 2)  # no index was published for the OVERWRITE: rebuilt here
    upsert(ctx, arrow(upd, spec), "after")
    if spec.primary_keys == ["id"]:
        assert_table_equals(get_table(opts, "db.t"), expected_upsert([upd], "id", start=expected), "id")
        latest = get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id
        published = index_content(ctx.index_uri, latest)
        fresh = bootstrap(opts, "db.t", str(tmp_path / "fresh"), 2)
        assert published == index_content(fresh.index_uri, latest)
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
    from airflow_paimon.engine.assign.shapes import shape_of
    from airflow_paimon.engine.errors import ValidationError
    from airflow_paimon.engine.runs.assign_and_write import check_write_mode

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


def test_a_bucket_of_a_replaced_partition_with_only_deletes(warehouse):
    """Every key of one bucket of partition a moves to b, while a is replaced by one other row: that bucket's
    write holds only DELETEs. Its lookups marked files the OVERWRITE removes, so the commit leaves it out."""
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    spec = TableSpec.from_dict({**CROSS.to_dict(),
                                "options": {**CROSS.options, **LEVEL_0_COMPACTED["deletion-vectors"]}})
    get_or_create_table(opts, "db.t", spec)
    seed = pd.DataFrame({"id": np.arange(60), "dt": "a", "v": 1.0})
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(seed, spec), "seed")
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(seed.iloc[::5].assign(v=2.0), spec), "update")
    table = get_table(opts, "db.t")
    before = read_table(table)[["id", "dt", "v"]]
    keys_of = {}
    for e in live_entries(table, table.snapshot_manager().get_latest_snapshot()):
        keys_of.setdefault(e.bucket, set()).update(
            pq.ParquetFile(file_path(table, e)).read(columns=["_KEY_id"]).column(0).to_pylist())
    moved, other = sorted(keys_of[min(keys_of)]), sorted(keys_of[max(keys_of)])[0]
    batch = pd.DataFrame({"id": [*moved, other], "dt": ["b"] * len(moved) + ["a"], "v": 3.0})
    run_commit(stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(batch, spec), "ow", write_mode="overwrite"))
    table = get_table(opts, "db.t")
    actual = read_table(table)[["id", "dt", "v"]].sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected_overwrite(before, batch, ["id"]), check_dtype=False)
    assert_vectors_of_live_files(table, table.snapshot_manager().get_latest_snapshot())
