"""Paimon's dynamic-bucket HASH index files (Java HashIndexFile): one file per (partition, bucket) holding
the int hash of every key ever written to that bucket, as big-endian 4-byte ints; listed in the snapshot's
index manifest as IndexManifestEntry(kind ADD, index type "HASH", row count = number of hashes).

A commit replaces a bucket's file by adding a complete new one: Java's BucketedCombiner (and pypaimon's
``_combine_hash_indexes``) keep one HASH entry per (partition, bucket), the newest.
"""
from __future__ import annotations

import uuid
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
from pypaimon.index.index_file_handler import IndexFileHandler
from pypaimon.index.index_file_meta import IndexFileMeta
from pypaimon.manifest.index_manifest_entry import IndexManifestEntry
from pypaimon.table.row.generic_row import GenericRow

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.errors import CorruptTableError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

HASH_INDEX = "HASH"


def hash_index_entries(table: FileStoreTable, snapshot) -> dict[tuple, dict[int, IndexManifestEntry]]:
    """partition tuple -> bucket -> the HASH IndexManifestEntry live at ``snapshot`` (one manifest read)."""
    out: dict[tuple, dict[int, IndexManifestEntry]] = defaultdict(dict)
    if snapshot is None:
        return out
    for entry in IndexFileHandler(table).scan(snapshot, lambda e: e.index_file.index_type == HASH_INDEX):
        partition = tuple(entry.partition.values)
        if entry.bucket in out[partition]:
            raise CorruptTableError(f"table {table.identifier}: two HASH index files for partition {partition} bucket "
                                    f"{entry.bucket}: {out[partition][entry.bucket].index_file.file_name}, "
                                    f"{entry.index_file.file_name}")
        out[partition][entry.bucket] = entry
    return out


def read_hashes(table: FileStoreTable, entry: IndexManifestEntry) -> np.ndarray:
    """The int32 key hashes of one HASH index file."""
    path = table.path_factory().bucket_index_path(tuple(entry.partition.values), entry.bucket, entry.index_file,
                                                  table.file_io)
    with table.file_io.new_input_stream(path) as stream:
        payload = stream.read()
    if len(payload) % 4:
        raise CorruptTableError(f"corrupt HASH index {path}: {len(payload)} bytes is not a multiple of 4")
    return np.frombuffer(payload, dtype=">i4").astype(np.int32)


def write_hashes(table: FileStoreTable, partition: tuple, bucket: int, hashes: np.ndarray) -> IndexManifestEntry:
    """Write a complete HASH index file for (partition, bucket); returns its ADD entry for the commit."""
    hashes = np.unique(np.asarray(hashes, dtype=np.int32))  # a set, as Java's IntHashSet
    file_name = f"index-{uuid.uuid4()}-0"
    path, external = table.path_factory().new_bucket_index_path(tuple(partition), bucket, file_name)
    table.file_io.check_or_mkdirs(path.rsplit("/", 1)[0])
    try:
        with table.file_io.new_output_stream(path) as stream:
            stream.write(hashes.astype(">i4").tobytes())
    except Exception:
        table.file_io.delete_quietly(path)
        raise
    meta = IndexFileMeta(index_type=HASH_INDEX, file_name=path.rsplit("/", 1)[-1],
                         file_size=table.file_io.get_file_size(path), row_count=len(hashes),
                         external_path=path if external else None)
    return IndexManifestEntry(kind=FileKind.ADD, partition=GenericRow(list(partition), table.partition_keys_fields),
                              bucket=bucket, index_file=meta)
