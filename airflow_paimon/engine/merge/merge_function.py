"""The merge function of a compaction, columnar: every version of a key in, one row per key out, as Paimon's
merge function for the table's merge engine (deduplicate, first-row, partial-update, aggregation) merges them
in order of ``sequence.field`` (nulls first) then sequence number.

Rows keep their own sequence numbers (a merged row its key's highest; compaction never renumbers), so readers
still order them against files left out of the compaction.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.merge.rowkind import merge_partial_update
from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.codec.kinds import INSERT, is_retract, retracts
from airflow_paimon.engine.codec.system_fields import SEQUENCE_NUMBER, VALUE_KIND, value_column
from airflow_paimon.engine.merge.aggregate import aggregate
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.merge.merge_engine import MergeEngine, MergeRules
from airflow_paimon.engine.files.data_files import is_last_of_key
from airflow_paimon.engine.options import TableOptions


def lookup_merge_input(parts: list[tuple[int, pa.Table]], key_columns: list[str], rules: MergeRules) -> pa.Table:
    """The records of ``parts`` ((level, key-value rows) of a bucket's files) that Paimon's LookupMergeFunction
    merges in a table whose writes look up (lookup changelog, deletion vectors): of a key's records above level 0
    only the newest, which holds its merged value — older ones are shadowed, merged into it already — and all its
    level-0 records. Only partial-update and aggregation merge a shadowed record differently (an aggregation would
    count it twice); a Java Paimon writer leaves them where a key was written again."""
    kv = pa.concat_tables([rows for _, rows in parts])
    if rules.engine not in (MergeEngine.AGGREGATE, MergeEngine.PARTIAL_UPDATE) or kv.num_rows == 0:
        return kv
    high = np.concatenate([np.full(rows.num_rows, level > 0) for level, rows in parts])
    seq = kv.column(SEQUENCE_NUMBER).combine_chunks()
    keys = encode_keys(kv.select(key_columns), key_columns)
    newest = pa.table({"k": keys.filter(pa.array(high)), "s": seq.filter(pa.array(high))}) \
        .group_by("k").aggregate([("s", "max")])
    rows = pa.table({"k": keys, "i": pa.array(np.arange(kv.num_rows))}).join(newest, "k").sort_by("i")
    newest_seq = rows.column("s_max").to_numpy(zero_copy_only=False)
    keep = ~high | (seq.to_numpy(zero_copy_only=False) == newest_seq)
    return kv if keep.all() else kv.filter(pa.array(keep))


def merge_key_values(kv: pa.Table, key_columns: list[str], options: TableOptions, drop_delete: bool,
                     identifier: str = "?", rules: MergeRules | None = None,
                     primary_keys: list[str] | None = None) -> pa.Table:
    """One row per key, sorted by key, as the table's merge engine merges the versions of a key: the newest
    (deduplicate), the oldest live (first-row), each column's last non-null value (partial-update) or each
    field's aggregate (aggregation). A key with a single version passes unchanged (Paimon's reducer).
    ``options``: the table's (TableOptions); ``rules``: its MergeRules (read from ``options`` when not given)."""
    rules = rules or MergeRules.of(options, identifier)
    if rules.engine is MergeEngine.FIRST_ROW:
        kv = kv.filter(pc.invert(retracts(kv.column(VALUE_KIND))))
    if kv.num_rows == 0:
        return kv
    seq, ascending = list(rules.sequence_fields), rules.sequence_ascending
    order = [(k, "ascending") for k in key_columns]
    order += [(f, "ascending" if ascending else "descending") for f in seq]
    order.append((SEQUENCE_NUMBER, "ascending"))
    kv = kv.take(pc.sort_indices(kv, sort_keys=order, null_placement="at_start"))
    if rules.engine is MergeEngine.DEDUPLICATE:
        kv = kv.filter(is_last_of_key(kv, key_columns))
    elif rules.engine is MergeEngine.FIRST_ROW:
        kv = kv.filter(_first_of_key(kv, key_columns))
    else:
        kv = _merge_versions(kv, key_columns, options, rules, identifier, primary_keys)
    if drop_delete:
        kv = kv.filter(pc.invert(retracts(kv.column(VALUE_KIND))))
    return kv


def _merge_versions(kv: pa.Table, key_columns: list[str], options: TableOptions, rules: MergeRules, identifier: str,
                    primary_keys: list[str] | None = None) -> pa.Table:
    """partial-update / aggregation over ``kv`` sorted in merge order: keys with several versions merge into
    one row carrying the key's highest sequence number; a key with one version is kept as it is."""
    ends = np.flatnonzero(np.asarray(is_last_of_key(kv, key_columns).to_numpy(zero_copy_only=False)))
    starts = np.concatenate([[0], ends[:-1] + 1])
    sizes = ends - starts + 1
    several = sizes > 1
    if not several.any():
        return kv
    rows_of_several = np.repeat(several, sizes)
    sub = kv.filter(pa.array(rows_of_several))
    sub_sizes = sizes[several]
    sub_starts = np.concatenate([[0], np.cumsum(sub_sizes)[:-1]])
    sub_ends = sub_starts + sub_sizes - 1
    kinds = np.asarray(sub.column(VALUE_KIND).to_numpy(), dtype=np.int8)
    value_names = [n for n in kv.column_names if n not in key_columns and n not in (SEQUENCE_NUMBER, VALUE_KIND)]
    values = sub.select(value_names)
    if rules.engine is MergeEngine.PARTIAL_UPDATE:
        merged, out_kinds = _partial_update(values, kinds, sub_starts, rules, identifier)
    else:
        # Paimon's primary_key function keeps the whole primary key, partition fields in it too (a retraction
        # would clear them otherwise); key_columns are the trimmed key
        primary_keys = list(primary_keys or [value_column(k) for k in key_columns])
        merged = aggregate(values, kinds, sub_starts, options, primary_keys, list(rules.sequence_fields), identifier)
        out_kinds = np.full(len(sub_starts), INSERT, dtype=np.int8)  # Paimon's aggregate is always an INSERT
    top = np.maximum.reduceat(np.asarray(sub.column(SEQUENCE_NUMBER).to_numpy(), dtype=np.int64), sub_starts)
    columns = {k: sub.column(k).take(pa.array(sub_ends)) for k in key_columns}
    columns.update({SEQUENCE_NUMBER: pa.array(top, pa.int64()), VALUE_KIND: pa.array(out_kinds, pa.int8())})
    columns.update({n: merged.column(n) for n in value_names})
    merged = pa.table([columns[n] for n in kv.column_names], schema=kv.schema)
    both = pa.concat_tables([kv.filter(pa.array(~rows_of_several)), merged])
    key_index = np.concatenate([np.flatnonzero(~several), np.flatnonzero(several)])
    return both.take(pa.array(np.argsort(key_index, kind="stable")))


def _partial_update(values: pa.Table, kinds: np.ndarray, starts: np.ndarray, rules: MergeRules, identifier: str):
    retract = is_retract(kinds)
    if retract.any() and rules.refuses_retractions:
        raise ValidationError(
            identifier, f"merge-engine partial-update cannot merge the {int(retract.sum())} -U/-D records "
            "found with other versions of their keys; set 'partial-update.remove-record-on-delete' = 'true' "
            "(a -D removes the row) or 'ignore-delete' = 'true' (retractions are ignored), as Paimon requires")
    return merge_partial_update(values, kinds, np.arange(values.num_rows), starts,
                                remove_on_delete=rules.remove_record_on_delete, ignore_delete=rules.ignore_delete,
                                paimon_retractions=True)


def retract_counts(kv: pa.Table, row_counts: list[int]) -> list[int]:
    """Retraction rows per consecutive slice of ``kv`` (one slice per written file)."""
    retract = retracts(kv.column(VALUE_KIND)).to_numpy(zero_copy_only=False)
    bounds = np.cumsum([0, *row_counts])
    cumulative = np.concatenate([[0], np.cumsum(retract, dtype=np.int64)])
    return [int(cumulative[e] - cumulative[s]) for s, e in zip(bounds[:-1], bounds[1:])]


def _first_of_key(kv: pa.Table, key_columns: list[str]) -> pa.Array:
    last = is_last_of_key(kv, key_columns)
    return pa.concat_arrays([pa.array([True]), last.slice(0, kv.num_rows - 1)])
