"""Assign one shard of a batch like Paimon's GlobalIndexAssigner: known keys keep their place, moved keys
follow the merge engine, deletes leave the index, new keys get a bucket from BucketAssigner. Columnar;
RocksDB calls are batched.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.index.buckets import BucketAssigner
from airflow_paimon.engine.merge.rowkind import pick_per_key, resolve_duplicates
from airflow_paimon.engine.codec.kinds import DELETE, is_retract
from airflow_paimon.engine.codec.keys import decode_partition, encode_partitions
from airflow_paimon.engine.index.shard import ShardIndex, decode_values, encode_values
from airflow_paimon.engine.merge.merge_engine import MergeRules

KEY, ORDER, BUCKET, ROW_KIND = "_key", "_order", "_bucket", "_row_kind"
__all__ = ["KEY", "ORDER", "BUCKET", "ROW_KIND", "Assigned", "assign_shard"]


@dataclass
class Assigned:
    rows: pa.Table  # the table's columns + _key, _bucket, _row_kind; partition columns hold the target partition
    rows_in: int
    deletes: int      # delete rows written to a key's old place (moves and -D/-U of known keys)
    moved_keys: int
    dropped: int      # input rows that are not written (merged duplicates, first-row, unknown deletes)
    new_keys: int     # keys the index did not know before
    removed_keys: int  # keys deleted from the index


def _with_partition(rows: pa.Table, partition_fields: list[str], encoded: pa.Array,
                    partition_types: list[pa.DataType]) -> pa.Table:
    """``rows`` with their partition columns replaced by the decoded ``encoded`` partitions."""
    dictionary = encoded.dictionary_encode()
    decoded = [decode_partition(p, partition_types) for p in dictionary.dictionary.to_pylist()]
    for i, name in enumerate(partition_fields):
        values = pa.array([d[i] for d in decoded], partition_types[i]).take(dictionary.indices)
        rows = rows.set_column(rows.schema.get_field_index(name), name, values)
    return rows


def _resolve(batch: pa.Table, rules: MergeRules, identifier: str) -> tuple[pa.Table, pa.Table]:
    """(one record per key — the one that decides where the key goes, all records to write)."""
    batch, kinds = rules.filter_row_kinds(batch, batch.column(ROW_KIND).to_numpy())
    if rules.aggregates:  # every record is written; Paimon's merge aggregates them
        last = pick_per_key(batch, [KEY], list(rules.sequence_fields), rules.sequence_ascending, last=True)
        return batch.take(pa.array(np.sort(last))), batch
    resolved = resolve_duplicates(batch, kinds, [KEY], rules, identifier=identifier)
    rows = resolved.rows.set_column(resolved.rows.schema.get_field_index(ROW_KIND), ROW_KIND,
                                    pa.array(resolved.row_kinds, pa.int8()))
    return rows, rows


def assign_shard(batch: pa.Table, *, partition_fields: list[str], partition_types: list[pa.DataType],
                 index: ShardIndex, buckets: BucketAssigner, rules: MergeRules | None = None,
                 identifier: str = "?") -> Assigned:
    """Assign every row of ``batch`` (one shard's rows, carrying _key, _order and _row_kind) to a place, under the
    table's merge ``rules`` (default: deduplicate's).

    Updates ``index`` and ``buckets`` in place; returns the rows to write, delete rows included.
    """
    rules = rules or MergeRules()
    rows_in = batch.num_rows
    batch = batch.take(pc.sort_indices(batch.column(ORDER)))  # input order: merge order and new buckets
    deciding, records = _resolve(batch, rules, identifier)
    keys = deciding.column(KEY).combine_chunks()
    new_part = encode_partitions(deciding, partition_fields)
    found = index.lookup(keys)
    known = np.asarray(found.is_valid().to_numpy(zero_copy_only=False))
    # Under aggregation a retraction is an input to the aggregate, not a delete of the key.
    retract = (is_retract(np.asarray(deciding.column(ROW_KIND).to_numpy(), dtype=np.int8))
               if not rules.aggregates else np.zeros(deciding.num_rows, dtype=bool))
    known_idx = np.nonzero(known)[0]
    stored = decode_values(found.filter(pa.array(known)))
    same = np.asarray(pc.equal(stored.partition, new_part.filter(pa.array(known))).to_numpy(zero_copy_only=False))

    # Per key (rows of ``deciding``): where its records go, and whether they go at all.
    n = deciding.num_rows
    bucket = np.full(n, -1, dtype=np.int32)
    # A delete of a key the index does not know has nothing to delete; a deduplicate table ordered by the runs'
    # clock still writes it (a tombstone in the row's partition), so an older run committed later does not bring
    # the key back (engine/commit/ordering.py reads the keys later runs wrote from their files)
    tombstone = ~known & retract if rules.keeps_tombstones else np.zeros(n, dtype=bool)
    keep = ~retract | known | tombstone
    removed = known & retract
    moving = np.zeros(n, dtype=bool)
    moves, takes = rules.existing.process_exists(same)
    moving[known_idx[moves]] = True
    keep[known_idx[~takes]] = False
    moving &= ~retract
    # Known keys that take the record without moving (same partition, use-old, deletes) go to their place.
    at_old = np.zeros(n, dtype=bool)
    at_old[known_idx] = True
    at_old &= ~moving & keep
    old_bucket = np.full(n, -1, dtype=np.int32)
    old_bucket[known_idx] = stored.bucket
    stored_at = np.full(n, -1, dtype=np.int64)  # per key, its row in ``stored`` (-1: not known)
    stored_at[known_idx] = np.arange(len(known_idx))

    def old_part(rows: np.ndarray) -> pa.Array:
        """The stored partition of keys ``rows`` (all known). Arrow takes: no Python string per row."""
        return stored.partition.take(pa.array(stored_at[rows]))

    bucket[at_old] = old_bucket[at_old]
    target_part = pc.if_else(pa.array(at_old), stored.partition.take(pa.array(stored_at, mask=stored_at < 0)),
                             new_part)

    # Moves (deduplicate): a delete in the old place, then the key is new in its new partition.
    moved = np.nonzero(moving)[0]
    moved_take = pa.array(moved, pa.int64())
    move_deletes = _with_partition(deciding.take(moved_take), partition_fields, old_part(moved), partition_types)
    move_deletes = move_deletes.set_column(move_deletes.schema.get_field_index(ROW_KIND), ROW_KIND,
                                           pa.array(np.full(len(moved), DELETE, np.int8)))
    move_deletes = move_deletes.append_column(BUCKET, pa.array(old_bucket[moved], pa.int32()))
    left = np.nonzero(moving | removed)[0]
    buckets.decrement(old_part(left), old_bucket[left])

    fresh = np.nonzero((bucket < 0) & keep)[0]
    fresh_take = pa.array(fresh, pa.int64())
    bucket[fresh] = buckets.assign(new_part.take(fresh_take))
    graves = fresh[tombstone[fresh]]  # placed, but no key of the table: not in the index, not counted in buckets
    buckets.decrement(new_part.take(pa.array(graves, pa.int64())), bucket[graves])
    fresh = fresh[~tombstone[fresh]]
    fresh_take = pa.array(fresh, pa.int64())
    index.put(keys.take(fresh_take), encode_values(bucket[fresh], new_part.take(fresh_take)))
    index.delete(keys.filter(pa.array(removed)))

    # Every record of a kept key goes where its key goes.
    if records is deciding:  # one record per key: each record is its own key's row
        pos = np.arange(n, dtype=np.int64)
    else:
        position = pc.index_in(records.column(KEY), value_set=keys)
        pos = np.asarray(position.to_numpy(zero_copy_only=False), dtype=np.int64)
    placed = np.nonzero(keep[pos])[0]
    out = records.take(pa.array(placed, pa.int64()))
    out = _with_partition(out, partition_fields, target_part.take(pa.array(pos[placed])), partition_types)
    out = out.append_column(BUCKET, pa.array(bucket[pos[placed]], pa.int32()))
    out = pa.concat_tables([out, move_deletes.select(out.column_names)]).drop_columns([ORDER])
    return Assigned(out, rows_in, deletes=len(moved) + int(removed.sum()) + int(tombstone.sum()),
                    moved_keys=len(moved), dropped=records.num_rows - len(placed) + (rows_in - records.num_rows),
                    new_keys=int((~known & keep & ~tombstone).sum()), removed_keys=int(removed.sum()))
