"""Assign one shard of a batch like Paimon's GlobalIndexAssigner: known keys keep their place, moved keys
follow the merge engine, new keys get a bucket from BucketAssigner. Columnar; RocksDB calls are batched.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.buckets import BucketAssigner
from airflow_paimon.engine.index.keys import decode_partition, encode_partitions
from airflow_paimon.engine.index.shard import ShardIndex, decode_values, encode_values

KEY, ORDER, BUCKET, KIND = "_key", "_order", "_bucket", "_kind"
INSERT, DELETE = 0, 3  # Paimon RowKind bytes: +I and -D


@dataclass
class Assigned:
    rows: pa.Table  # the table's columns + _key, _bucket, _kind; partition columns hold the target partition
    rows_in: int
    deletes: int
    moved_keys: int
    dropped: int
    new_keys: int  # keys the index did not know before


def last_per_key(batch: pa.Table) -> pa.Table:
    """Duplicate keys in one batch: the last row (by input order) wins."""
    if batch.num_rows < 2:
        return batch
    ordered = batch.take(pc.sort_indices(batch, sort_keys=[(KEY, "ascending"), (ORDER, "ascending")]))
    keys = ordered.column(KEY).combine_chunks()
    is_last = pc.not_equal(keys.slice(0, len(keys) - 1), keys.slice(1))
    keep = pa.concat_arrays([is_last, pa.array([True])])
    return ordered.filter(keep)


def _with_partition(rows: pa.Table, partition_fields: list[str], encoded: pa.Array,
                    partition_types: list[pa.DataType]) -> pa.Table:
    """``rows`` with their partition columns replaced by the decoded ``encoded`` partitions."""
    dictionary = encoded.dictionary_encode()
    decoded = [decode_partition(p, partition_types) for p in dictionary.dictionary.to_pylist()]
    for i, name in enumerate(partition_fields):
        values = pa.array([d[i] for d in decoded], partition_types[i]).take(dictionary.indices)
        rows = rows.set_column(rows.schema.get_field_index(name), name, values)
    return rows


def assign_shard(batch: pa.Table, *, partition_fields: list[str], partition_types: list[pa.DataType],
                 index: ShardIndex, buckets: BucketAssigner, merge_engine: str = "deduplicate") -> Assigned:
    """Assign every row of ``batch`` (one shard's rows, carrying _key and _order) to (partition, bucket).

    Updates ``index`` and ``buckets`` in place; returns the rows to write, delete rows included.
    """
    rows_in = batch.num_rows
    batch = last_per_key(batch)
    batch = batch.take(pc.sort_indices(batch.column(ORDER)))  # arrival order decides new buckets
    keys = batch.column(KEY).combine_chunks()
    new_part = encode_partitions(batch, partition_fields)
    found = index.lookup(keys)
    known = np.asarray(found.is_valid().to_numpy(zero_copy_only=False))

    bucket = np.full(batch.num_rows, -1, dtype=np.int32)
    known_idx = np.nonzero(known)[0]
    old_bucket, _, old_part = decode_values(found.filter(pa.array(known)))
    same = np.asarray(pc.equal(old_part, new_part.filter(pa.array(known))).to_numpy(zero_copy_only=False))
    bucket[known_idx[same]] = old_bucket[same]

    moved_idx, moved_bucket = known_idx[~same], old_bucket[~same]
    moved_part = old_part.filter(pa.array(~same))
    keep = np.ones(batch.num_rows, dtype=bool)
    deletes = None
    if merge_engine == "deduplicate":
        # Delete from the old place, then treat as a new key of its new partition.
        deletes = _with_partition(batch.take(moved_idx), partition_fields, moved_part, partition_types)
        deletes = deletes.append_column(BUCKET, pa.array(moved_bucket, pa.int32()))
        buckets.decrement(moved_part, moved_bucket)
    elif merge_engine in ("partial-update", "aggregation"):
        # The update belongs to the row where the key already lives.
        bucket[moved_idx] = moved_bucket
        batch = _replace_rows_partition(batch, moved_idx, moved_part, partition_fields, partition_types)
        new_part = encode_partitions(batch, partition_fields)
    elif merge_engine == "first-row":
        keep[moved_idx] = False  # the first row stays where it is
    else:
        raise ValueError(f"merge-engine {merge_engine!r} is not supported for cross-partition upsert")

    # New keys, and keys that moved under deduplicate, take a bucket in their (new) partition.
    fresh = np.nonzero((bucket < 0) & keep)[0]
    fresh_take = pa.array(fresh, pa.int64())
    bucket[fresh] = buckets.assign(new_part.take(fresh_take))
    index.put(keys.take(fresh_take), encode_values(bucket[fresh], new_part.take(fresh_take)))

    placed = np.nonzero(keep)[0]
    out = batch.take(pa.array(placed, pa.int64())).append_column(BUCKET, pa.array(bucket[placed], pa.int32()))
    out = out.append_column(KIND, pa.array(np.full(len(placed), INSERT, dtype=np.int8)))
    n_deletes = 0
    if deletes is not None and deletes.num_rows:
        n_deletes = deletes.num_rows
        deletes = deletes.append_column(KIND, pa.array(np.full(n_deletes, DELETE, dtype=np.int8)))
        out = pa.concat_tables([out, deletes.select(out.column_names)])
    out = out.drop_columns([ORDER])
    return Assigned(out, rows_in, n_deletes, len(moved_idx), dropped=batch.num_rows - len(placed),
                    new_keys=int((~known).sum()))


def _replace_rows_partition(batch, idx, encoded, partition_fields, partition_types) -> pa.Table:
    if len(idx) == 0:
        return batch
    moved = _with_partition(batch.take(pa.array(idx, pa.int64())), partition_fields, encoded, partition_types)
    rest = np.setdiff1d(np.arange(batch.num_rows), idx)
    merged = pa.concat_tables([batch.take(pa.array(rest, pa.int64())), moved])
    return merged.take(pc.sort_indices(merged.column(ORDER)))
