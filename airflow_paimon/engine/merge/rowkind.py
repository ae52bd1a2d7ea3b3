"""Row kinds and in-batch merging, columnar, the way Paimon's write buffer merges one key's records.

- An operation column holds +I, -U, +U, -D; Paimon's RowKind bytes are 0, 1, 2, 3 (-U and -D retract:
  engine/codec/kinds.py).
- Paimon orders one key's records by the table's ``sequence.field`` columns (reversed when
  ``sequence.field.sort-order`` = descending; nulls first either way), then by sequence number (input order
  here), and hands them to the merge function: deduplicate keeps the last, first-row the first,
  partial-update takes each column's last non-null value. Which retractions are dropped, refused or taken
  is the table's MergeRules (engine/merge/merge_engine.py).
- Aggregation needs the table's aggregate functions: resolve it in Paimon itself by writing the r-th
  occurrence of each key in the r-th file (``occurrence_rounds``) so the read/compaction merge aggregates.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.codec.keys import sort_keys
from airflow_paimon.engine.codec.kinds import DELETE, INSERT, ROW_KINDS, is_retract
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.merge.merge_engine import MergeEngine, MergeRules

_KIND_BYTES = np.array(list(ROW_KINDS.values()), dtype=np.int8)
_ORDER = "__input_order"


def row_kinds(op: pa.Array | pa.ChunkedArray, *, identifier: str = "?", column: str = "op") -> np.ndarray:
    """RowKind byte per row of an operation column; an unknown or null value fails naming table, column, value."""
    op = op.cast(pa.string())
    codes = pc.index_in(op, value_set=pa.array(list(ROW_KINDS)))
    if codes.null_count:
        bad = pc.filter(op, pc.is_null(codes)).to_pylist()[0]
        raise ValidationError(identifier, f"operation must be one of {list(ROW_KINDS)}", column=column, value=bad)
    return _KIND_BYTES[np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int64)]


def merge_order(rows: pa.Table, key_fields: list[str], seq_fields: Sequence[str] = (), ascending: bool = True
                ) -> np.ndarray:
    """Row indices sorted by key, then sequence fields, then input order: each key's records as Paimon
    merges them."""
    t = pa.table({**{f"k{i}": rows.column(k) for i, k in enumerate(key_fields)},
                  **{f"s{i}": rows.column(s) for i, s in enumerate(seq_fields)},
                  _ORDER: pa.array(np.arange(rows.num_rows, dtype=np.int64))})
    direction = "ascending" if ascending else "descending"
    keys = [(f"k{i}", "ascending") for i in range(len(key_fields))]
    # Java's generated comparator puts null sequence values first in either direction (nullIsLast=false).
    order = pc.sort_indices(t, sort_keys=keys + [(f"s{i}", direction) for i in range(len(seq_fields))]
                            + [(_ORDER, "ascending")], null_placement="at_start")
    return np.asarray(order.to_numpy(zero_copy_only=False), dtype=np.int64)


def key_group_starts(rows: pa.Table, key_fields: list[str], order: np.ndarray) -> np.ndarray:
    """Positions in ``order`` where a new key starts (``order`` groups equal keys together)."""
    n = len(order)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    take = pa.array(order)
    for k in key_fields:
        col = rows.column(k).take(take)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        differs = pc.fill_null(pc.not_equal(col.slice(0, n - 1), col.slice(1)), True)
        new[1:] |= np.asarray(differs.to_numpy(zero_copy_only=False))
    return np.nonzero(new)[0]


def keys_unique(rows: pa.Table, key_fields: list[str]) -> bool:
    """Whether ``rows`` are known to hold no key twice: an encoded key column (the assigner's _key) whose bytes
    sort in numpy without a repeat (codec/keys.py), in about half the time of merge_order's Arrow sort, so a
    batch without duplicates (the usual one) skips the merge. Other keys answer False: merge_order sorts
    them faster than they encode."""
    if rows.num_rows < 2:
        return True
    if len(key_fields) != 1 or not pa.types.is_binary(rows.schema.field(key_fields[0]).type):
        return False
    keys = rows.column(key_fields[0])
    return keys.null_count == 0 and not sort_keys(keys).duplicated


def occurrence_rounds(rows: pa.Table, key_fields: list[str], seq_fields: Sequence[str] = (), ascending: bool = True
                      ) -> np.ndarray:
    """For each row, how many earlier records of its key precede it in merge order (0 for the first)."""
    if keys_unique(rows, key_fields):
        return np.zeros(rows.num_rows, dtype=np.int64)
    order = merge_order(rows, key_fields, seq_fields, ascending)
    starts = key_group_starts(rows, key_fields, order)
    group_start = np.repeat(starts, np.diff(np.append(starts, len(order))))
    rounds = np.empty(len(order), dtype=np.int64)
    rounds[order] = np.arange(len(order)) - group_start
    return rounds


@dataclass
class Resolved:
    rows: pa.Table      # one row per key, in input order of each key's surviving (last merged) record
    row_kinds: np.ndarray  # int8 RowKind of each row
    dropped: int        # input rows that did not survive as their own row


def resolve_duplicates(rows: pa.Table, kinds: np.ndarray, key_fields: list[str], rules: MergeRules | None = None,
                       *, identifier: str = "?") -> Resolved:
    """One record per key, as Paimon's merge function would leave it after merging this batch (default rules:
    a deduplicate table's)."""
    rules = rules or MergeRules()
    seq, asc = list(rules.sequence_fields), rules.sequence_ascending
    n_in = rows.num_rows
    rows, kinds = rules.filter_row_kinds(rows, kinds)
    if rules.aggregates:
        raise NotImplementedError("aggregation merges with the table's aggregate functions: write each key's "
                                  "r-th record in the r-th file (occurrence_rounds) and let Paimon merge them")
    rules.check_retractions(kinds, identifier)
    if rules.engine is MergeEngine.PARTIAL_UPDATE:
        return _partial_update(rows, kinds, key_fields, seq, asc, rules, identifier, n_in)
    pick = np.sort(pick_per_key(rows, key_fields, seq, asc, last=rules.engine is MergeEngine.DEDUPLICATE))
    if len(pick) == rows.num_rows:  # every record its key's only one: nothing merged
        return Resolved(rows, kinds, n_in - len(pick))
    return Resolved(rows.take(pa.array(pick)), kinds[pick], n_in - len(pick))


def pick_per_key(rows, key_fields, seq=(), asc: bool = True, *, last: bool) -> np.ndarray:
    """The row index of each key's last (or first) record in merge order, in no particular order."""
    if keys_unique(rows, key_fields):
        return np.arange(rows.num_rows, dtype=np.int64)
    order = merge_order(rows, key_fields, seq, asc)
    starts = key_group_starts(rows, key_fields, order)
    ends = np.append(starts[1:], len(order)) - 1
    return order[ends if last else starts]


def _partial_update(rows, kinds, key_fields, seq, asc, rules: MergeRules, identifier, n_in) -> Resolved:
    if rules.sequence_groups:
        raise ValidationError(identifier, "partial-update with sequence-group is not supported")
    order = merge_order(rows, key_fields, seq, asc)
    starts = key_group_starts(rows, key_fields, order)
    merged, out_kinds = merge_partial_update(rows, kinds, order, starts, remove_on_delete=rules.remove_record_on_delete)
    ends = np.append(starts[1:], len(order)) - 1
    # The key columns always come from the key's last record (every record carries them).
    for k in key_fields:
        merged = merged.set_column(merged.schema.get_field_index(k), rows.schema.field(k),
                                   rows.column(k).combine_chunks().take(pa.array(order[ends])))
    by_input = np.argsort(order[ends], kind="stable")
    return Resolved(merged.take(pa.array(by_input)), out_kinds[by_input], n_in - len(starts))


def merge_partial_update(rows: pa.Table, kinds: np.ndarray, order: np.ndarray, starts: np.ndarray, *,
                         remove_on_delete: bool, ignore_delete: bool = False, paimon_retractions: bool = False
                         ) -> tuple[pa.Table, np.ndarray]:
    """Paimon's PartialUpdateMergeFunction (no sequence groups), columnar: ``rows.take(order)`` holds each key's
    records in merge order, a key starting at each of ``starts``; returns one row per key (in that order) with
    every column's last non-null value, and each key's RowKind. The caller refuses retractions it cannot take.

    With ``remove_on_delete`` a -D resets the key and -U is ignored; ``ignore_delete`` skips retractions.
    ``paimon_retractions``: retractions exactly as Paimon's merge function treats them (compaction): a
    retraction that starts the key, or a -D that resets it, seeds the row with its own values, and a key with
    no +I/+U record merges to a DELETE. Without it (the in-batch merge's convention) a reset key starts empty
    and only the last record being a -D makes a DELETE.
    """
    n, groups = len(order), len(starts)
    ordered_kinds = np.asarray(kinds, dtype=np.int8)[order]
    retract = is_retract(ordered_kinds)
    resets = (ordered_kinds == DELETE) & remove_on_delete & ~(retract & ignore_delete)
    group = np.repeat(np.arange(groups), np.diff(np.append(starts, n)))
    pos = np.arange(n)
    last_delete = np.full(groups, -1, dtype=np.int64)
    if resets.any():
        np.maximum.at(last_delete, group, np.where(resets, pos, -1))
    if paimon_retractions:
        live = pos >= last_delete[group]
        counted = ~retract | (pos == starts[group]) | (pos == last_delete[group])
    else:
        live = pos > last_delete[group]
        counted = ~retract
    ends = np.append(starts[1:], n) - 1
    take_order = pa.array(order)
    columns = {}
    for name in rows.column_names:
        col = rows.column(name).combine_chunks().take(take_order)
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False)) & live & counted
        last_valid = np.full(groups, -1, dtype=np.int64)
        np.maximum.at(last_valid, group, np.where(valid, pos, -1))
        columns[name] = col.take(pa.array(np.where(last_valid >= 0, last_valid, ends), mask=last_valid < 0))
    out_kinds = np.where(last_delete == ends, DELETE, INSERT).astype(np.int8)
    if paimon_retractions:
        inserts = np.zeros(groups, dtype=np.int64)
        np.add.at(inserts, group, ~retract)
        out_kinds[inserts == 0] = DELETE
    return pa.table(columns, schema=rows.schema), out_kinds
