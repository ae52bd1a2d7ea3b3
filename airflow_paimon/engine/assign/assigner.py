"""Assign one shard of a batch like Paimon's GlobalIndexAssigner: known keys keep their place, moved keys
follow the merge engine, new keys get a bucket from BucketAssigner. Columnar; RocksDB calls are batched.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.buckets import BucketAssigner
from airflow_paimon.engine.index.keys import decode_partition, encode_ordering, encode_partitions
from airflow_paimon.engine.index.shard import ShardIndex, decode_values, encode_values

KEY, ORDER, BUCKET, KIND = "_key", "_order", "_bucket", "_kind"
_ORDERING = "_ordering"
ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
INSERT, DELETE = 0, 3  # Paimon RowKind bytes: +I and -D


@dataclass
class Assigned:
    rows: pa.Table  # the table's columns + _key, _bucket, _kind; partition columns hold the target partition
    rows_in: int
    deletes: int
    moved_keys: int
    dropped: int
    new_keys: int  # keys the index did not know before


@dataclass(frozen=True)
class Ordering:
    """The table's ``sequence.field`` (empty: arrival order only) and its sort order."""

    fields: tuple[str, ...] = ()
    ascending: bool = True

    def of(self, batch: pa.Table) -> pa.Array:
        return encode_ordering(batch, list(self.fields))


def last_per_key(batch: pa.Table, ordering: Ordering = Ordering()) -> pa.Table:
    """Duplicate keys in one batch resolve as Paimon's merge would: the highest sequence.field wins (the
    lowest for descending order), ties and tables without one go to the last row in input order."""
    if batch.num_rows < 2:
        return batch
    sort_keys = [(KEY, "ascending")]
    if ordering.fields:
        batch = batch.append_column(_ORDERING, ordering.of(batch))
        sort_keys.append((_ORDERING, "ascending" if ordering.ascending else "descending"))
    ordered = batch.take(pc.sort_indices(batch, sort_keys=sort_keys + [(ORDER, "ascending")]))
    keys = ordered.column(KEY).combine_chunks()
    is_last = pc.not_equal(keys.slice(0, len(keys) - 1), keys.slice(1))
    kept = ordered.filter(pa.concat_arrays([is_last, pa.array([True])]))
    return kept.drop_columns([_ORDERING]) if ordering.fields else kept


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
                 index: ShardIndex, buckets: BucketAssigner, merge_engine: str = "deduplicate",
                 ordering: Ordering = Ordering()) -> Assigned:
    """Assign every row of ``batch`` (one shard's rows, carrying _key and _order) to (partition, bucket).

    Updates ``index`` and ``buckets`` in place; returns the rows to write, delete rows included.
    """
    if merge_engine not in ENGINES:
        raise ValueError(f"merge-engine {merge_engine!r} is not supported for cross-partition upsert")
    rows_in = batch.num_rows
    batch = last_per_key(batch, ordering)
    batch = batch.take(pc.sort_indices(batch.column(ORDER)))  # arrival order decides new buckets
    keys = batch.column(KEY).combine_chunks()
    new_part = encode_partitions(batch, partition_fields)
    found = index.lookup(keys)
    known = np.asarray(found.is_valid().to_numpy(zero_copy_only=False))
    known_idx = np.nonzero(known)[0]
    stored = decode_values(found.filter(pa.array(known)))
    same = np.asarray(pc.equal(stored.partition, new_part.filter(pa.array(known))).to_numpy(zero_copy_only=False))

    bucket = np.full(batch.num_rows, -1, dtype=np.int32)
    bucket[known_idx[same]] = stored.bucket[same]
    moving = ~same
    if merge_engine in ("partial-update", "aggregation"):
        moving[:] = False  # the update belongs to the row where the key already lives
    stay_elsewhere = ~same & ~moving  # written into the key's old place, which the merge engine resolves
    keep = np.ones(batch.num_rows, dtype=bool)
    if merge_engine == "first-row":
        keep[known_idx[~same]] = False  # the first row stays where it is
        moving[:] = stay_elsewhere[:] = False
    bucket[known_idx[stay_elsewhere]] = stored.bucket[stay_elsewhere]
    batch = _replace_rows_partition(batch, known_idx[stay_elsewhere], stored.partition.filter(pa.array(stay_elsewhere)),
                                    partition_fields, partition_types)
    new_part = encode_partitions(batch, partition_fields)

    moved_idx, moved_bucket = known_idx[moving], stored.bucket[moving]
    moved_part = stored.partition.filter(pa.array(moving))
    deletes = _with_partition(batch.take(pa.array(moved_idx, pa.int64())), partition_fields, moved_part,
                              partition_types).append_column(BUCKET, pa.array(moved_bucket, pa.int32()))
    buckets.decrement(moved_part, moved_bucket)

    # New keys, and moved keys (deduplicate), take a bucket in their (new) partition.
    fresh = np.nonzero((bucket < 0) & keep)[0]
    bucket[fresh] = buckets.assign(new_part.take(pa.array(fresh, pa.int64())))
    take = pa.array(fresh, pa.int64())
    index.put(keys.take(take), encode_values(bucket[fresh], new_part.take(take)))

    placed = np.nonzero(keep)[0]
    out = batch.take(pa.array(placed, pa.int64())).append_column(BUCKET, pa.array(bucket[placed], pa.int32()))
    out = out.append_column(KIND, pa.array(np.full(len(placed), INSERT, dtype=np.int8)))
    if deletes.num_rows:
        deletes = deletes.append_column(KIND, pa.array(np.full(deletes.num_rows, DELETE, dtype=np.int8)))
        out = pa.concat_tables([out, deletes.select(out.column_names)])
    out = out.drop_columns([ORDER])
    return Assigned(out, rows_in, deletes.num_rows, len(moved_idx), dropped=batch.num_rows - len(placed),
                    new_keys=int((~known).sum()))


def _replace_rows_partition(batch, idx, encoded, partition_fields, partition_types) -> pa.Table:
    if len(idx) == 0:
        return batch
    moved = _with_partition(batch.take(pa.array(idx, pa.int64())), partition_fields, encoded, partition_types)
    rest = np.setdiff1d(np.arange(batch.num_rows), idx)
    merged = pa.concat_tables([batch.take(pa.array(rest, pa.int64())), moved])
    return merged.take(pc.sort_indices(merged.column(ORDER)))
