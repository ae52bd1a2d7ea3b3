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

The deletion vectors of a bucket live in one index file (Paimon's ``DELETION_VECTORS`` index, per bucket): the
message deletes the bucket's old index entry and adds the new one. pypaimon's own readers, writers and types
are used for the format (BitmapDeletionVector, DeletionVector.read, IndexFileMeta).
"""
from __future__ import annotations

import dataclasses
import uuid
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector
from pypaimon.deletionvectors.deletion_vector import DeletionVector
from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.table.source.deletion_file import DeletionFile
from pypaimon.utils.roaring_bitmap import RoaringBitmap
from pypaimon.write.commit_message import CommitMessage

from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.codec.kinds import FileKind, is_retract
from airflow_paimon.engine.codec.system_fields import key_column, key_columns
from airflow_paimon.engine.compact.merge import merge_key_values
from airflow_paimon.engine.data_files import read_as, read_columns, without_rows
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.merge_engine import MergeEngine, MergeRules
from airflow_paimon.engine.write.bucket_writer import (file_schema, key_value_layout, key_value_schema,
                                                      write_changelog_files, write_key_values)
from airflow_paimon.engine.write.changelog_producers import lookup_changelog, row_deduplicate

if TYPE_CHECKING:
    from pypaimon.manifest.schema.data_file_meta import DataFileMeta
    from pypaimon.table.file_store_table import FileStoreTable

DV_INDEX = IndexManifestFile.DELETION_VECTORS_INDEX
DV_INDEX_VERSION = 1  # the first byte of a deletion-vector index file


@dataclass(frozen=True)
class LiveFile:
    """A live data file of the bucket at the base snapshot."""
    path: str
    meta: DataFileMeta

    @property
    def name(self) -> str:
        return self.meta.file_name

    @property
    def level(self) -> int:
        return self.meta.level


def enabled(options: dict) -> bool:
    return str(options.get("deletion-vectors.enabled", "false")).strip().lower() == "true"


def live_files_by_bucket(table: FileStoreTable, snapshot, partition_types, entries: list | None = None
                         ) -> dict[tuple[str, int], list[LiveFile]]:
    """(encoded partition, bucket) -> the bucket's live files at ``snapshot`` (computed once, on the driver).
    ``entries``: the snapshot's live_entries when the caller has them already."""
    from airflow_paimon.engine.codec.keys import encode_partition_values
    from airflow_paimon.engine.scan import file_path, live_entries

    out: dict[tuple[str, int], list[LiveFile]] = {}
    for e in live_entries(table, snapshot) if entries is None else entries:
        key = (encode_partition_values(tuple(e.partition.values), partition_types), e.bucket)
        out.setdefault(key, []).append(LiveFile(file_path(table, e), e.file))
    return out


def check_no_level_0(identifier: str, levels) -> None:
    """Refuse, before anything is written, a deletion-vector table holding level-0 files (``levels``: of every
    live data file): its readers do not see them (deletion vectors turned on after other writes), and a write
    here would not merge with them."""
    level_0 = sum(level == 0 for level in levels)
    if level_0:
        raise ValidationError(identifier, f"{level_0} live data files are at level 0, which readers of a deletion-"
                                          "vector table skip (deletion vectors were turned on after they were "
                                          "written); turn the option off and compact the table fully first",
                              option="deletion-vectors.enabled", value="true")


_VECTOR_ENTRIES: dict = {}


def _vector_entries(table: FileStoreTable, index_manifest: str) -> dict[tuple, list[IndexManifestEntry]]:
    """(partition, bucket) -> the deletion-vector index entries of one index manifest (an immutable file), read
    once per process: a task process writes many buckets of one snapshot."""
    key = (table.table_path, index_manifest)
    if key not in _VECTOR_ENTRIES:
        found: dict[tuple, list] = {}
        for e in IndexManifestFile(table).read(index_manifest):
            if e.kind == FileKind.ADD and e.index_file.index_type == DV_INDEX:
                found.setdefault((tuple(e.partition.values), e.bucket), []).append(e)
        _VECTOR_ENTRIES.clear()  # one snapshot at a time
        _VECTOR_ENTRIES[key] = found
    return _VECTOR_ENTRIES[key]


def bucket_deletion_vectors(table: FileStoreTable, snapshot, partition: tuple, bucket: int
                            ) -> tuple[list[IndexManifestEntry], dict[str, DeletionVector]]:
    """The bucket's deletion-vector index entries at ``snapshot`` and the vector of each data file they hold."""
    if snapshot is None or not snapshot.index_manifest:
        return [], {}
    entries = list(_vector_entries(table, snapshot.index_manifest).get((tuple(partition), bucket), ()))
    return entries, _read_vectors(table, tuple(partition), bucket, entries)


def _read_vectors(table: FileStoreTable, partition: tuple, bucket: int, entries) -> dict[str, DeletionVector]:
    """Data file name -> its deletion vector, from the bucket's index entries."""
    vectors = {}
    for e in entries:
        path = table.path_factory().bucket_index_path(partition, bucket, e.index_file, table.file_io)
        for name, meta in (e.index_file.dv_ranges or {}).items():
            vectors[name] = DeletionVector.read(table.file_io, DeletionFile(path, meta.offset, meta.length,
                                                                            meta.cardinality))
    return vectors


def level_0_paths(table: FileStoreTable, snapshot) -> set[str]:
    """The level-0 data files at ``snapshot`` of a deletion-vector table, which its readers skip (set() for other
    tables: their readers merge level 0)."""
    from airflow_paimon.engine.scan import file_path, live_entries

    if snapshot is None or not enabled(table.table_schema.options):
        return set()
    return {file_path(table, e) for e in live_entries(table, snapshot) if e.file.level == 0}


def deleted_rows_at(table: FileStoreTable, snapshot) -> dict[str, np.ndarray]:
    """Data file path -> the row positions its deletion vector marks at ``snapshot`` (every bucket; {} for a
    table without deletion vectors)."""
    from airflow_paimon.engine.scan import file_path, live_entries

    if snapshot is None or not snapshot.index_manifest or not enabled(table.table_schema.options):
        return {}
    paths = {(tuple(e.partition.values), e.bucket, e.file.file_name): file_path(table, e)
             for e in live_entries(table, snapshot)}
    out = {}
    for (partition, bucket), entries in _vector_entries(table, snapshot.index_manifest).items():
        for name, vector in _read_vectors(table, partition, bucket, entries).items():
            if (partition, bucket, name) in paths:
                out[paths[(partition, bucket, name)]] = positions(vector)
    return out


def partition_index_deletes(table: FileStoreTable, snapshot, partitions) -> list[IndexManifestEntry]:
    """DELETE entries for the deletion-vector index files of ``partitions`` at ``snapshot`` (dropped partitions)."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    wanted = {tuple(p) for p in partitions}
    return [deleted_entry(e) for e in IndexManifestFile(table).read(snapshot.index_manifest)
            if e.kind == FileKind.ADD and e.index_file.index_type == DV_INDEX and tuple(e.partition.values) in wanted]


def write_index_file(table: FileStoreTable, partition: tuple, bucket: int,
                     vectors: dict[str, DeletionVector]) -> IndexManifestEntry:
    """One deletion-vector index file holding ``vectors`` (data file name -> vector), as Paimon lays it out:
    a version byte, then per data file its serialized vector (length, magic number, bitmap, checksum)."""
    name = f"index-{uuid.uuid4()}-0"
    path, external = table.path_factory().new_bucket_index_path(tuple(partition), bucket, name)
    chunks, ranges, position = [bytes([DV_INDEX_VERSION])], {}, 1
    for data_file in sorted(vectors):
        serialized = vectors[data_file].serialize()
        ranges[data_file] = DeletionVectorMeta(data_file, position, int.from_bytes(serialized[:4], "big"),
                                               vectors[data_file].get_cardinality())
        chunks.append(serialized)
        position += len(serialized)
    data = b"".join(chunks)
    with table.file_io.new_output_stream(path) as out:
        out.write(data)
    meta = IndexFileMeta(index_type=DV_INDEX, file_name=name, file_size=len(data), row_count=len(ranges),
                         dv_ranges=ranges, external_path=path if external else None)
    return IndexManifestEntry(kind=FileKind.ADD, partition=GenericRow(list(partition), table.partition_keys_fields),
                              bucket=bucket, index_file=meta)


def positions(vector: DeletionVector) -> np.ndarray:
    """The row positions a deletion vector marks, ascending."""
    from pyroaring import BitMap  # pypaimon's RoaringBitmap wraps it; its serialized form is the portable one

    return np.frombuffer(BitMap.deserialize(vector.bit_map().serialize()).to_array(), dtype=np.uint32).astype(np.int64)


def with_positions(vector: DeletionVector | None, marked: np.ndarray) -> DeletionVector:
    """``vector`` (or an empty one) with the rows at ``marked`` marked too."""
    from pyroaring import BitMap

    added = array("I")
    added.frombytes(np.asarray(marked, dtype=np.uint32).tobytes())
    bitmap = RoaringBitmap.deserialize(BitMap(added).serialize())
    if vector is not None:
        bitmap = RoaringBitmap.or_(vector.bit_map(), bitmap)
    return BitmapDeletionVector(bitmap)


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
        fresh = merge_key_values(pa.concat_tables([before, batch]), key_columns(pk), dict(table.table_schema.options),
                                 drop_delete=True, identifier=table.identifier.get_full_name(), rules=rules)
    marks = {int(i): old_pos[old_file == i] for i in np.unique(old_file)}
    if changelog:
        images = lookup_changelog(table, before, fresh, row_deduplicate(table.table_schema.options))
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
    from airflow_paimon.engine.schema_evolution import file_column_names

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


def deleted_entry(entry: IndexManifestEntry) -> IndexManifestEntry:
    return IndexManifestEntry(kind=FileKind.DELETE, partition=entry.partition, bucket=entry.bucket,
                              index_file=entry.index_file)
