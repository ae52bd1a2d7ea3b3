"""``changelog-producer=lookup`` without deletion vectors, as Paimon's writer does it (ForceUpLevel0Compaction with
the lookup changelog): the write's commit also lifts its level-0 files out — the APPEND snapshot adds them, the
COMPACT snapshot of the same commit identity (engine/commit/compact_increment.py) replaces them — and the
compaction's changelog compares each written key's old value with its new one.

- The old value of a key is what readers saw: the merge of its versions in the bucket's files at the base snapshot
  (a key deleted there has none). The new value is that merge with the batch's records.
- The level-0 files go one level below the bucket's lowest run (the max level in an empty bucket); with level 1
  taken they are merged into level 1 (Paimon's universal compaction of level 0). Level-0 files another writer left
  are compacted with them. Old rows at higher levels stay: readers merge them, the new run's sequence numbers win;
  under aggregation and partial-update the higher files give the written keys up instead, so that a key's one
  record above level 0 is its merged value, which Paimon's lookup merge reads as the key's value.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.write.commit_message import CommitMessage

from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.codec.kinds import is_retract
from airflow_paimon.engine.codec.system_fields import key_column, key_columns
from airflow_paimon.engine.merge.merge_function import lookup_merge_input, merge_key_values
from airflow_paimon.engine.files.data_files import read_columns
from airflow_paimon.engine.merge.merge_engine import MergeEngine, MergeRules
from airflow_paimon.engine.write.bucket_writer import (file_schema, key_value_layout, key_value_schema,
                                                      write_changelog_files, write_key_values)
from airflow_paimon.engine.write.changelog_producers import lookup_changelog
from airflow_paimon.engine.files.deletion_vectors import LiveFile
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.write.lookup_compact import read_live_file

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def force_up_level_0(message: CommitMessage, table: FileStoreTable, rules: MergeRules, files: list[LiveFile],
                     num_levels: int,
                     rows: pa.Table, kinds: np.ndarray, max_sequence_number: int, changelog: bool = True
                     ) -> CommitMessage:
    """Fill the compact increment of ``message`` — whose new files are the batch's records at level 0 (``rows``,
    ``kinds``; a key may repeat under aggregation) — against the bucket's ``files`` at the base snapshot: the
    level-0 files compacted up, and (``changelog``) the lookup changelog of the batch's keys."""
    partition, bucket = tuple(message.partition), message.bucket
    options, name = TableOptions.of(table), table.identifier.get_full_name()
    keys = key_columns(table.trimmed_primary_keys)
    rows = rows.select(list(table.field_names)).cast(file_schema(table))
    batch = key_value_layout(table, rows, pa.array(kinds), max_sequence_number)

    def merged(kv: pa.Table, drop_delete: bool) -> pa.Table:
        return merge_key_values(kv, keys, options, drop_delete=drop_delete, identifier=name, rules=rules,
                                primary_keys=list(table.primary_keys))

    old = _versions(table, files, encode_keys(batch.select(keys), keys), rules)
    before, after = merged(old, True), merged(pa.concat_tables([old, batch]), True)
    kept_as_written = True
    if rules.engine is MergeEngine.FIRST_ROW:  # the table keeps a key it holds: +I for a new key, nothing else
        held = encode_keys(before.select(keys), keys)
        new = pc.invert(pc.is_in(encode_keys(batch.select(keys), keys), value_set=held))
        kept_as_written = bool(pc.all(new).as_py() is not False)
        batch = batch.filter(new)
        before, after = before.slice(0, 0), after.filter(pc.invert(pc.is_in(encode_keys(after.select(keys), keys),
                                                                             value_set=held)))
    if changelog:
        images = lookup_changelog(table, before, after, options.merge.row_deduplicate)
        message.compact_changelog_files = (write_changelog_files(table, partition, bucket, images)
                                           if images.num_rows else [])

    higher = sorted({f.level for f in files if f.level > 0})
    level = max(higher[0] - 1, 1) if higher else num_levels - 1
    below = bool(higher) and higher[-1] > level  # older rows below the output: its deletes must stay
    joined = [f for f in files if f.level in (0, level)]  # level-0 files left by others, and level 1 when taken
    message.compact_before = [*message.new_files, *(f.meta for f in joined)]
    retracted = bool(is_retract(kinds).any())
    if rules.engine in (MergeEngine.AGGREGATE, MergeEngine.PARTIAL_UPDATE):
        return _lift_merged(message, table, rules, files, joined, batch, level, merged)
    if not joined and kept_as_written and (below or not retracted):
        # one non-overlapping run of the keys' final values: re-level it, as Paimon upgrades a file
        message.compact_after = [dataclasses.replace(f, level=level) for f in message.new_files]
        return message
    schema = key_value_schema(table)
    run = merged(pa.concat_tables([*(read_live_file(table, f, schema) for f in joined), batch]), not below)
    message.compact_after = write_key_values(table, partition, bucket, run, level=level).new_files \
        if run.num_rows else []
    return message


def _lift_merged(message: CommitMessage, table: FileStoreTable, rules: MergeRules, files: list[LiveFile],
                 joined: list[LiveFile], batch: pa.Table, level: int, merged) -> CommitMessage:
    """Aggregation and partial-update: Paimon's lookup merge (LookupMergeFunction) takes a key's newest record
    above level 0 as its merged value, while readers that merge every level (pypaimon) fold all of a key's records
    together. Both read the same only when each key sits in one file above level 0 holding its merged value, as
    here: the output run holds every version of its keys (the batch's and the joined files') merged, and the
    higher files holding one of those keys are rewritten at their level without them."""
    partition, bucket = tuple(message.partition), message.bucket
    schema = key_value_schema(table)
    keys = key_columns(table.trimmed_primary_keys)
    parts = [*((f.level, read_live_file(table, f, schema)) for f in joined), (0, batch)]
    lifted = pc.unique(pa.concat_arrays([encode_keys(t.select(keys), keys) for _, t in parts]))
    replaced, rewritten = [], []
    for f in files:
        if f.level == 0 or f.level == level:
            continue  # joined: read whole above
        stored = read_columns(f.path, keys)  # its keys first: a file holding none of them is not read whole
        hit = pc.is_in(encode_keys(stored, keys), value_set=lifted)
        if not pc.any(hit).as_py():
            continue
        rows = read_live_file(table, f, schema)
        parts.append((f.level, rows.filter(hit)))
        replaced.append(f.meta)
        kept = rows.filter(pc.invert(hit))
        if kept.num_rows:  # the file's other keys stay at its level, its key range only narrows
            rewritten += write_key_values(table, partition, bucket, kept, level=f.level).new_files
    # every version of these keys is in (a delete has nothing below), those a Java writer shadowed left out
    run = merged(lookup_merge_input(parts, keys, rules), True)
    message.compact_before = [*message.compact_before, *replaced]
    message.compact_after = [*(write_key_values(table, partition, bucket, run, level=level).new_files
                               if run.num_rows else []), *rewritten]
    return message


def _versions(table: FileStoreTable, files: list[LiveFile], wanted: pa.Array, rules: MergeRules) -> pa.Table:
    """Every version of the ``wanted`` keys (encoded) in ``files`` that Paimon's lookup merge reads
    (merge_function.lookup_merge_input), in the key-value layout; a file is read whole only when its key columns
    hold one of them."""
    schema = key_value_schema(table)
    pk = list(table.trimmed_primary_keys)
    parts = []
    for f in files:
        stored = read_columns(f.path, [key_column(k) for k in pk]).rename_columns(pk)
        hit = np.asarray(pc.is_in(encode_keys(stored, pk), value_set=wanted).to_numpy(zero_copy_only=False), dtype=bool)
        if hit.any():
            parts.append((f.level, read_live_file(table, f, schema).filter(pa.array(hit))))
    return lookup_merge_input(parts, key_columns(pk), rules) if parts else schema.empty_table()
