"""Paimon's deletion vectors as files: the bucket's live files, and the deletion-vector
index files (read, written, deleted) that the write, the commit, compaction and the readers share.

The deletion vectors of a bucket live in one index file (Paimon's ``DELETION_VECTORS`` index, per bucket): the
message deletes the bucket's old index entry and adds the new one. pypaimon's own readers, writers and types
are used for the format (BitmapDeletionVector, DeletionVector.read, IndexFileMeta).
"""
from __future__ import annotations

import uuid
from array import array
from dataclasses import dataclass

import numpy as np
from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector
from pypaimon.deletionvectors.deletion_vector import DeletionVector
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.index.deletion_vector_meta import DeletionVectorMeta
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.table.row.generic_row import GenericRow
from pypaimon.table.source.deletion_file import DeletionFile
from pypaimon.utils.roaring_bitmap import RoaringBitmap

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options import TableOptions

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


def live_files_by_bucket(table, snapshot, partition_types, entries: list | None = None
                         ) -> dict[tuple[str, int], list[LiveFile]]:
    """(encoded partition, bucket) -> the bucket's live files at ``snapshot`` (computed once, on the driver).
    ``entries``: the snapshot's live_entries when the caller has them already."""
    from airflow_paimon.engine.codec.keys import encode_partition_values
    from airflow_paimon.engine.files.scan import file_path, live_entries

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


def _vector_entries(table, index_manifest: str) -> dict[tuple, list[IndexManifestEntry]]:
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


def bucket_deletion_vectors(table, snapshot, partition: tuple, bucket: int
                            ) -> tuple[list[IndexManifestEntry], dict[str, DeletionVector]]:
    """The bucket's deletion-vector index entries at ``snapshot`` and the vector of each data file they hold."""
    if snapshot is None or not snapshot.index_manifest:
        return [], {}
    entries = list(_vector_entries(table, snapshot.index_manifest).get((tuple(partition), bucket), ()))
    return entries, _read_vectors(table, tuple(partition), bucket, entries)


def _read_vectors(table, partition: tuple, bucket: int, entries) -> dict[str, DeletionVector]:
    """Data file name -> its deletion vector, from the bucket's index entries."""
    vectors = {}
    for e in entries:
        path = table.path_factory().bucket_index_path(partition, bucket, e.index_file, table.file_io)
        for name, meta in (e.index_file.dv_ranges or {}).items():
            vectors[name] = DeletionVector.read(table.file_io, DeletionFile(path, meta.offset, meta.length,
                                                                            meta.cardinality))
    return vectors


def level_0_paths(table, snapshot) -> set[str]:
    """The level-0 data files at ``snapshot`` of a deletion-vector table, which its readers skip (set() for other
    tables: their readers merge level 0)."""
    from airflow_paimon.engine.files.scan import file_path, live_entries

    if snapshot is None or not TableOptions.of(table).deletion_vectors:
        return set()
    return {file_path(table, e) for e in live_entries(table, snapshot) if e.file.level == 0}


def deleted_rows_at(table, snapshot) -> dict[str, np.ndarray]:
    """Data file path -> the row positions its deletion vector marks at ``snapshot`` (every bucket; {} for a
    table without deletion vectors)."""
    from airflow_paimon.engine.files.scan import file_path, live_entries

    if snapshot is None or not snapshot.index_manifest or not TableOptions.of(table).deletion_vectors:
        return {}
    paths = {(tuple(e.partition.values), e.bucket, e.file.file_name): file_path(table, e)
             for e in live_entries(table, snapshot)}
    out = {}
    for (partition, bucket), entries in _vector_entries(table, snapshot.index_manifest).items():
        for name, vector in _read_vectors(table, partition, bucket, entries).items():
            if (partition, bucket, name) in paths:
                out[paths[(partition, bucket, name)]] = positions(vector)
    return out


def partition_index_deletes(table, snapshot, partitions) -> list[IndexManifestEntry]:
    """DELETE entries for the deletion-vector index files of ``partitions`` at ``snapshot`` (dropped partitions)."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    wanted = {tuple(p) for p in partitions}
    return [deleted_entry(e) for e in IndexManifestFile(table).read(snapshot.index_manifest)
            if e.kind == FileKind.ADD and e.index_file.index_type == DV_INDEX and tuple(e.partition.values) in wanted]


def write_index_file(table, partition: tuple, bucket: int, vectors: dict[str, DeletionVector]) -> IndexManifestEntry:
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


def deleted_entry(entry: IndexManifestEntry) -> IndexManifestEntry:
    return IndexManifestEntry(kind=FileKind.DELETE, partition=entry.partition, bucket=entry.bucket,
                              index_file=entry.index_file)
