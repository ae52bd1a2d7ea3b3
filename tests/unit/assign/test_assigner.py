import numpy as np
import pyarrow as pa
import pytest

from airflow_paimon.engine.assign.assigner import BUCKET, KEY, ROW_KIND, ORDER, assign_shard
from airflow_paimon.engine.codec.kinds import DELETE, INSERT
from airflow_paimon.engine.index.buckets import BucketAssigner
from airflow_paimon.engine.errors import PaimonJobError
from airflow_paimon.engine.codec.keys import encode_keys, encode_partitions
from airflow_paimon.engine.index.shard import ShardIndex, encode_values
from airflow_paimon.engine.merge.merge_engine import MergeRules

PTYPES = [pa.string()]


def batch(ids, dts, vs, kinds=None):
    t = pa.table({"id": pa.array(ids, pa.int64()), "dt": dts, "v": pa.array(vs, pa.float64())})
    t = t.append_column(KEY, encode_keys(t, ["id"])).append_column(ORDER, pa.array(np.arange(len(ids)), pa.int64()))
    return t.append_column(ROW_KIND, pa.array(kinds or [INSERT] * len(ids), pa.int8()))


@pytest.fixture
def index():
    with ShardIndex() as idx:
        existing = pa.table({"id": pa.array([1, 2], pa.int64()), "dt": ["a", "b"]})
        idx.put(encode_keys(existing, ["id"]), encode_values(np.array([0, 3]), encode_partitions(existing, ["dt"])))
        yield idx


def run(index, b, engine="deduplicate"):
    buckets = BucketAssigner(0, 1, 2, {"a": {"0": 1}, "b": {"3": 1}})
    out = assign_shard(b, partition_fields=["dt"], partition_types=PTYPES, index=index, buckets=buckets,
                       rules=MergeRules.of({"merge-engine": engine}))
    rows = {(r["id"], r[ROW_KIND]): r for r in out.rows.to_pylist()}
    return out, rows


def test_deduplicate_keeps_place_moves_and_assigns(index):
    out, rows = run(index, batch([1, 2, 9, 9], ["a", "c", "a", "a"], [10, 20, 90, 91]))
    assert (rows[(1, INSERT)]["dt"], rows[(1, INSERT)][BUCKET]) == ("a", 0)          # same partition: its bucket
    assert (rows[(2, DELETE)]["dt"], rows[(2, DELETE)][BUCKET]) == ("b", 3)          # moved: delete old place
    assert (rows[(2, INSERT)]["dt"], rows[(2, INSERT)][BUCKET]) == ("c", 0)          # ... insert in the new one
    assert rows[(9, INSERT)]["v"] == 91 and rows[(9, INSERT)][BUCKET] == 0           # last duplicate wins; a/0 had room
    assert (out.rows_in, out.deletes, out.moved_keys, out.rows.num_rows) == (4, 1, 1, 4)
    # the index follows: key 2 now lives in c/0, key 9 in a/0
    again = assign_shard(batch([2, 9], ["c", "a"], [0, 0]), partition_fields=["dt"], partition_types=PTYPES,
                         index=index, buckets=BucketAssigner(0, 1, 2), rules=MergeRules.of({}))
    assert [(r["id"], r[BUCKET], r[ROW_KIND]) for r in again.rows.to_pylist()] == [(2, 0, INSERT), (9, 0, INSERT)]


def test_partial_update_writes_into_old_place(index):
    out, rows = run(index, batch([2], ["c"], [20]), "partial-update")
    assert (rows[(2, INSERT)]["dt"], rows[(2, INSERT)][BUCKET], out.deletes) == ("b", 3, 0)


def test_first_row_drops_moved_key(index):
    out, rows = run(index, batch([2, 5], ["c", "c"], [20, 50]), "first-row")
    assert list(rows) == [(5, INSERT)] and out.dropped == 1


def test_deletes_leave_the_index_and_hit_the_old_place(index):
    out, rows = run(index, batch([2, 7, 1], ["c", "a", "a"], [0, 0, 5], [DELETE, DELETE, INSERT]))
    assert (rows[(2, DELETE)]["dt"], rows[(2, DELETE)][BUCKET]) == ("b", 3)  # where key 2 lives, whatever dt said
    # unknown key: nothing to delete, but a deduplicate table writes the delete where the row says (a tombstone,
    # so an older day committed later cannot bring key 7 back: engine/commit/ordering.py); the index stays without it
    assert rows[(7, DELETE)]["dt"] == "a" and rows[(7, DELETE)][BUCKET] >= 0
    assert (out.deletes, out.removed_keys, out.dropped, out.moved_keys, out.new_keys) == (2, 1, 0, 0, 0)
    for key in (2, 7):
        found = index.lookup(encode_keys(pa.table({"id": pa.array([key], pa.int64())}), ["id"]))
        assert not found.is_valid()[0].as_py()


def test_a_delete_of_an_unknown_key_is_dropped_where_the_table_keeps_its_own_order(index):
    out = assign_shard(batch([7], ["a"], [0], [DELETE]), partition_fields=["dt"], partition_types=PTYPES, index=index,
                       buckets=BucketAssigner(0, 1, 2), rules=MergeRules.of({"sequence.field": "v"}))
    assert out.rows.num_rows == 0 and (out.deletes, out.dropped) == (0, 1)


def test_aggregation_writes_every_record_where_the_key_lives(index):
    out, _ = run(index, batch([2, 2, 8, 8], ["c", "c", "a", "a"], [1, 2, 3, 4]), "aggregation")
    placed = sorted((r["id"], r["dt"], r[BUCKET], r["v"]) for r in out.rows.to_pylist())
    assert placed == [(2, "b", 3, 1.0), (2, "b", 3, 2.0), (8, "a", 0, 3.0), (8, "a", 0, 4.0)]
    assert (out.deletes, out.new_keys) == (0, 1)


def test_unknown_merge_engine_is_refused(index):
    with pytest.raises(PaimonJobError, match="merge-engine 'lookup' is not supported"):
        run(index, batch([2], ["c"], [20]), "lookup")

