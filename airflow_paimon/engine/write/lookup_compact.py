"""Writing one bucket of a deletion-vector table (``deletion-vectors.enabled=true``), so that every row the run
writes is visible to every reader after its commit (readers of such tables skip level-0 files and read the
other files without merging, dropping the rows their deletion vectors mark).

What Paimon's writer does with its lookup compaction (``ForceUpLevel0Compaction`` + ``DeletionVectorsMaintainer``),
prepared in the write task as the compact increment of the bucket's commit message, whose data increment is the
batch's records at level 0 (the commit makes them an APPEND snapshot, then a COMPACT one:
engine/commit/compact_increment.py):

- the bucket's live rows at the base snapshot are looked up by key (their key columns, the bucket's deletion
  vectors applied); every key the batch writes or deletes marks its old row in the old file's deletion vector;
- the batch's live rows go one level below the bucket's lowest non-empty level (the max level in an empty
  bucket), as Paimon's universal compaction places a compacted level 0: the level-0 files re-levelled when they
  hold exactly those rows, else written again; -U/-D rows do not go up (Paimon drops deletes when compacting
  with deletion vectors); with level 1 taken, level 1's live rows are merged in and the run stays at level 1;
- how the new row of a live key is made follows the merge engine: deduplicate takes the batch's, first-row keeps
  the old one (the batch's row is dropped), partial-update / aggregation / sequence.field merge the old row with
  the batch's records (Paimon's lookup merge).

The index files themselves: engine/files/deletion_vectors.py.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.deletionvectors.deletion_vector import DeletionVector
from pypaimon.write.commit_message import CommitMessage

from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.codec.kinds import is_retract
from airflow_paimon.engine.codec.system_fields import key_column, key_columns
from airflow_paimon.engine.merge.merge_function import merge_key_values
from airflow_paimon.engine.files.data_files import read_as, read_columns, without_rows
from airflow_paimon.engine.files.deletion_vectors import (LiveFile, bucket_deletion_vectors, deleted_entry, positions,
                                                    with_positions, write_index_file)
from airflow_paimon.engine.merge.merge_engine import MergeEngine, MergeRules
if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

from airflow_paimon.engine.write.bucket_writer import (file_schema, key_value_layout, key_value_schema,
                                                      write_changelog_files, write_key_values)
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.write.changelog_producers import lookup_changelog


def locate(table: FileStoreTable, files: list[LiveFile], vectors: dict[str, DeletionVector], keys: pa.Table
           ) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``keys`` (the trimmed primary key columns, file types): the index in ``files`` and the
    row position of its live row, -1 / -1 where the bucket does not hold the key (rows a vector marks are not
    live). Each file is sorted by key: a single integer key is found by binary search per file; other keys by a
    hash lookup of their encoded bytes."""
    pk = list(table.trimmed_primary_keys)
    file_of = np.full(keys.num_rows, -1, dtype=np.int64)
    position = np.full(keys.num_rows, -1, dtype=np.int64)
    integer = len(pk) == 1 and pa.types.is_integer(keys.schema.field(0).type) and keys.column(0).null_count == 0
    wanted = keys.column(0).to_numpy() if integer else encode_keys(keys, pk)
    for i, f in enumerate(files):
        stored = read_columns(f.path, [key_column(k) for k in pk]).rename_columns(pk)
        live = np.ones(stored.num_rows, dtype=bool)
        if f.name in vectors:
            live[positions(vectors[f.name])] = False
        if integer:
            column = stored.column(0).to_numpy()
            at = np.minimum(np.searchsorted(column, wanted), max(len(column) - 1, 0))
            found = (column[at] == wanted) if len(column) else np.zeros(len(wanted), dtype=bool)
        else:
            index = pc.index_in(wanted, value_set=encode_keys(stored, pk))
            found = np.asarray(pc.is_valid(index).to_numpy(zero_copy_only=False), dtype=bool)
            at = np.asarray(pc.fill_null(index, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
        found &= live[at] if len(live) else False
        file_of[found], position[found] = i, at[found]
    return file_of, position


def lookup_compact(message: CommitMessage, table: FileStoreTable, rules: MergeRules, snapshot, files: list[LiveFile],
                   num_levels: int, rows: pa.Table, kinds: np.ndarray, max_sequence_number: int,
                   changelog: bool = False) -> CommitMessage:
    """Fill the compact increment of ``message`` — whose new files are the batch's records at level 0 (``rows``,
    ``kinds``; a key may repeat under aggregation) — against the bucket's ``files`` at ``snapshot``: the level-0
    files leave, the batch's rows enter above level 0, the old rows they replace are marked. ``changelog``:
    ``changelog-producer=lookup``, the compaction's changelog (old and new images) with it."""
    partition, bucket = tuple(message.partition), message.bucket
    entries, vectors = bucket_deletion_vectors(table, snapshot, partition, bucket)
    vectors = {name: dv for name, dv in vectors.items() if name in {f.name for f in files}}
    pk = list(table.trimmed_primary_keys)
    rows = rows.select(list(table.field_names)).cast(file_schema(table))
    file_of, position = locate(table, files, vectors, rows.select(pk))
    hit = file_of >= 0
    # the old rows to mark (a key repeats under aggregation: each old row once), as (file, position) pairs
    old = (np.unique(np.stack([file_of[hit], position[hit]], axis=1), axis=0) if hit.any()
           else np.zeros((0, 2), np.int64))
    old_file, old_pos = old[:, 0], old[:, 1]
    live = ~is_retract(kinds)
    if rules.engine is MergeEngine.FIRST_ROW:  # the old row stays, the batch's row of that key goes
        live &= ~hit
        old_file, old_pos = old_file[:0], old_pos[:0]
    as_written = rules.engine in (MergeEngine.FIRST_ROW, MergeEngine.DEDUPLICATE) and not rules.sequence_fields
    before = _rows_at(table, files, old_file, old_pos) if changelog or not as_written else None
    if as_written:  # the batch's live rows as they are
        fresh = key_value_layout(table, rows.filter(pa.array(live)), pa.array(kinds[live]), max_sequence_number)
    else:  # Paimon's lookup merge: the old row and the batch's records of its key, merged by the merge engine
        batch = key_value_layout(table, rows, pa.array(kinds), max_sequence_number)
        fresh = merge_key_values(pa.concat_tables([before, batch]), key_columns(pk), TableOptions.of(table),
                                 drop_delete=True, identifier=table.identifier.get_full_name(), rules=rules,
                                 primary_keys=list(table.primary_keys))
    marks = {int(i): old_pos[old_file == i] for i in np.unique(old_file)}
    if changelog:
        images = lookup_changelog(table, before, fresh, TableOptions.of(table).merge.row_deduplicate)
        message.compact_changelog_files = (write_changelog_files(table, partition, bucket, images)
                                           if images.num_rows else [])
    occupied = sorted({f.level for f in files})
    # Paimon's universal compaction of level 0: output just below the lowest run (the max level in an empty bucket);
    # with level 1 taken, level 1 is merged in and the output stays there
    level = max(occupied[0] - 1, 1) if occupied else num_levels - 1
    merged_in = [i for i, f in enumerate(files) if f.level == level]
    message.compact_before = [*message.new_files, *(files[i].meta for i in merged_in)]
    if merged_in:
        run = _merge_into(table, files, merged_in, vectors, marks, fresh)
        message.compact_after = write_key_values(table, partition, bucket, run, level=level).new_files \
            if run.num_rows else []
    elif as_written and _holds_exactly(message.new_files, int(live.sum())):  # re-level them, as Paimon upgrades
        message.compact_after = [dataclasses.replace(f, level=level) for f in message.new_files
                                 if not f.delete_row_count]
    elif fresh.num_rows:
        message.compact_after = write_key_values(table, partition, bucket, fresh, level=level).new_files
    changed = bool(marks) or any(files[i].name in vectors for i in merged_in)
    for i in merged_in:  # rewritten: their vectors go with them
        vectors.pop(files[i].name, None)
    for file_id, marked in marks.items():
        if file_id not in merged_in:
            vectors[files[file_id].name] = with_positions(vectors.get(files[file_id].name), marked)
    if changed:  # a new index file for the bucket replaces the old one
        message.compact_index_deletes = [deleted_entry(e) for e in entries]
        message.compact_index_adds = [write_index_file(table, partition, bucket, vectors)] if vectors else []
    return message


def _holds_exactly(level_0: list, live: int) -> bool:
    """Whether the level-0 files without -U/-D rows hold the ``live`` rows that go up and nothing else: each file
    holds only live rows or only retractions (engine/write/task.py writes them apart), and their counts agree."""
    pure = all(not f.delete_row_count or f.delete_row_count == f.row_count for f in level_0)
    return pure and sum(f.row_count for f in level_0 if not f.delete_row_count) == live


def _rows_at(table: FileStoreTable, files: list[LiveFile], file_ids: np.ndarray, rows_at: np.ndarray) -> pa.Table:
    """The key-value rows at (file, position), read in the table's current schema."""
    schema = key_value_schema(table)
    parts = [read_live_file(table, files[i], schema).take(pa.array(rows_at[file_ids == i]))
             for i in np.unique(file_ids)]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def read_live_file(table: FileStoreTable, f: LiveFile, schema: pa.Schema) -> pa.Table:
    """A data file in the current schema (a file of an older one by field id, added columns null)."""
    from airflow_paimon.engine.table.schema_evolution import file_column_names

    if f.meta.schema_id != table.table_schema.id:
        return read_as(f.path, schema, file_column_names(table, f.meta.schema_id))
    return read_columns(f.path, schema.names).select(schema.names).cast(schema)


def _merge_into(table: FileStoreTable, files: list[LiveFile], merged_in: list[int], vectors, marks,
                fresh: pa.Table) -> pa.Table:
    """The live rows of the files ``merged_in`` (their vectors and this batch's marks applied) and the batch's
    rows, as one sorted run (their keys are disjoint: the batch's keys were marked in the old files)."""
    schema = key_value_schema(table)
    parts = []
    for i in merged_in:
        f = files[i]
        dead = np.concatenate([positions(vectors[f.name]) if f.name in vectors else np.zeros(0, np.int64),
                               marks.get(i, np.zeros(0, np.int64))])
        parts.append(without_rows(read_live_file(table, f, schema), dead))
    merged = pa.concat_tables([*parts, fresh.cast(schema)])
    return merged.take(pc.sort_indices(merged, sort_keys=[(k, "ascending") for k in key_columns(
        table.trimmed_primary_keys)]))
