"""The before/after images Paimon's compaction-side changelog producers emit, columnar, in the key-value layout.

- ``lookup`` (Paimon's LookupChangelogMergeFunctionWrapper): a write's compaction of level 0 compares each key's
  old value (what readers saw before) with its new one.
- ``full-compaction`` (FullChangelogMergeFunctionWrapper): a compaction whose output is the max level compares each
  key's row at the max level (the state the previous full compaction left) with the merged result; a key the
  compaction did not touch below the max level emits nothing.

Both read ``changelog-producer.row-deduplicate`` as Paimon does: when true, a key whose value did not change emits
no -U/+U pair (default false: the pair is emitted).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.codec.kinds import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, retracts
from airflow_paimon.engine.codec.system_fields import SEQUENCE_NUMBER, VALUE_KIND, key_columns
from airflow_paimon.engine.write.bucket_writer import key_value_schema

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

def emits_full_compaction_changelog(producer: str, output_level: int, max_level: int) -> bool:
    """Paimon's FullChangelogMergeTreeCompactRewriter: only a compaction into the max level writes a changelog."""
    return producer == "full-compaction" and output_level == max_level


def lookup_changelog(table: FileStoreTable, before: pa.Table, after: pa.Table, deduplicate: bool = False) -> pa.Table:
    """Paimon's lookup changelog of one bucket's write, in the key-value layout, by key: a key whose old row was
    replaced reads -U (old) then +U (new), a new key +I, a key whose old row is gone (deleted, or moved to
    another partition) -D (old). ``before``: the old rows (live, one per key); ``after``: the new rows (live, one
    per key); ``deduplicate``: a replaced key whose values did not change emits nothing."""
    keys = key_columns(table.trimmed_primary_keys)
    schema = key_value_schema(table)
    old_keys, new_keys = encode_keys(before.select(keys), keys), encode_keys(after.select(keys), keys)
    replaced = np.asarray(pc.is_in(new_keys, value_set=old_keys).to_numpy(zero_copy_only=False), dtype=bool)
    kept = np.asarray(pc.is_in(old_keys, value_set=new_keys).to_numpy(zero_copy_only=False), dtype=bool)
    after_seq = np.asarray(after.column(SEQUENCE_NUMBER).to_numpy(), dtype=np.int64)
    top = int(after_seq.max()) if len(after_seq) else int(pc.max(before.column(SEQUENCE_NUMBER)).as_py() or 0)
    # the new row of each kept old row (old rows in their order, new rows in theirs)
    partner = np.asarray(pc.index_in(old_keys.filter(pa.array(kept)), value_set=new_keys)
                         .to_numpy(zero_copy_only=False), dtype=np.int64)
    olds, news = before.filter(pa.array(kept)), after.take(pa.array(partner))
    changed = ~_same_values(table, olds, news) if deduplicate else np.ones(len(partner), dtype=bool)
    # each old image takes the sequence number of its new one (read back in sequence order: -U right before +U)
    parts = [_with(after.filter(pa.array(~replaced)), INSERT, None),
             _with(olds.filter(pa.array(changed)), UPDATE_BEFORE, after_seq[partner[changed]]),
             _with(news.filter(pa.array(changed)), UPDATE_AFTER, None),
             _with(before.filter(pa.array(~kept)), DELETE, np.arange(top + 1, top + 1 + int((~kept).sum())))]
    images = pa.concat_tables([p.cast(schema) for p in parts])
    return sort_images(images, keys)


def full_compaction_changelog(table: FileStoreTable, top: pa.Table, merged: pa.Table, touched: pa.Array,
                              deduplicate: bool = False) -> pa.Table:
    """Paimon's full-compaction changelog of one compacted section: ``top`` the rows the max level held (what the
    previous full compaction emitted), ``merged`` the compaction's result, ``touched`` the encoded keys with a
    version below the max level — the others are unchanged and emit nothing."""
    keys = key_columns(table.trimmed_primary_keys)
    top = top.filter(pc.invert(retracts(top.column(VALUE_KIND))))
    in_top = pc.is_in(encode_keys(top.select(keys), keys), value_set=touched)
    in_merged = pc.is_in(encode_keys(merged.select(keys), keys), value_set=touched)
    return lookup_changelog(table, top.filter(in_top), merged.filter(in_merged), deduplicate)


def sort_images(images: pa.Table, keys: list[str]) -> pa.Table:
    """Changelog rows in file order: by key, then sequence number, then kind (-U before +U)."""
    order = [(k, "ascending") for k in keys] + [(SEQUENCE_NUMBER, "ascending"), (VALUE_KIND, "ascending")]
    return images.take(pc.sort_indices(images, sort_keys=order))


def _same_values(table: FileStoreTable, olds: pa.Table, news: pa.Table) -> np.ndarray:
    """Per row pair: whether every column holds the same value (nulls equal). A column type Arrow cannot
    compare counts as changed: the pair is then emitted, as without deduplication."""
    same = np.ones(olds.num_rows, dtype=bool)
    for name in table.field_names:
        a, b = olds.column(name), news.column(name)
        try:
            equal = pc.fill_null(pc.equal(a, b), False)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            return np.zeros(olds.num_rows, dtype=bool)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same &= np.asarray(pc.or_(equal, both_null).to_numpy(zero_copy_only=False), dtype=bool)
    return same


def _with(kv: pa.Table, kind: int, sequence: np.ndarray | None) -> pa.Table:
    kv = kv.set_column(kv.schema.get_field_index(VALUE_KIND), VALUE_KIND, pa.array(np.full(kv.num_rows, kind, np.int8)))
    if sequence is not None:
        kv = kv.set_column(kv.schema.get_field_index(SEQUENCE_NUMBER), SEQUENCE_NUMBER, pa.array(sequence, pa.int64()))
    return kv
