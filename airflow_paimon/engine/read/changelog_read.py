"""Incremental read of a table's changelog, as Paimon's ``incremental-between`` in ``changelog`` scan mode: the
changelog files the snapshots in (start, end] registered (``changelog-producer=input``: the rows each commit
wrote, with their row kinds), in commit order. Unlike the diff (engine/read/incremental.py) every change is there —
a key updated twice in the range reads twice, a moved key reads as ``-D`` in its old partition and as a row of
its new one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_paimon.engine.codec.kinds import ROW_KINDS
from airflow_paimon.engine.codec.system_fields import SEQUENCE_NUMBER, VALUE_KIND
from airflow_paimon.engine.files.data_files import read_as
from airflow_paimon.engine.files.scan import file_path

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

KIND_NAMES = np.array(sorted(ROW_KINDS, key=ROW_KINDS.__getitem__), dtype=np.object_)  # RowKind byte -> "+I", "-U", ...


@dataclass(frozen=True)
class PartitionChangelog:
    """The changelog files of one partition in (start, end], in commit order."""
    partition: tuple
    files: tuple[str, ...]


def plan_changelog(table: FileStoreTable, start: int, end: int) -> list[PartitionChangelog]:
    """Per partition, the changelog files snapshots start+1..end registered: by snapshot, then bucket, then
    sequence number (the order a consumer applies them in)."""
    lists, manifests = ManifestListManager(table), ManifestFileManager(table)
    found: dict[tuple, list] = {}
    for snapshot_id in range(start + 1, end + 1):
        snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
        if snapshot is None or not snapshot.changelog_manifest_list:
            continue
        entries = [e for m in lists.read_changelog(snapshot) for e in manifests.read(m.file_name, drop_stats=True)]
        for e in sorted(entries, key=lambda e: (e.bucket, e.file.min_sequence_number)):
            found.setdefault(tuple(e.partition.values), []).append(file_path(table, e))
    return [PartitionChangelog(p, tuple(files)) for p, files in sorted(found.items(), key=lambda kv: str(kv[0]))]


def changelog_rows(table: FileStoreTable, work: PartitionChangelog, row_kind_column: str) -> pa.Table:
    """The rows of one partition's changelog files (the table's columns as of now: a file of an older schema
    reads added columns as null), each with its row kind (``+I``, ``-U``, ``+U``, ``-D``), in file order."""
    from airflow_paimon.engine.write.bucket_writer import key_value_schema

    schema = key_value_schema(table)
    names = [f.name for f in schema if not f.name.startswith("_")]
    parts = []
    for path in work.files:
        kv = read_as(path, schema)
        kv = kv.take(pc.sort_indices(kv.column(SEQUENCE_NUMBER)))  # a file holds one bucket's rows in key order
        kinds = KIND_NAMES[np.asarray(kv.column(VALUE_KIND).to_numpy(), dtype=np.int64)]
        parts.append(kv.select(names).append_column(row_kind_column, pa.array(kinds, pa.string())))
    if not parts:
        return pa.schema([*(schema.field(n) for n in names), pa.field(row_kind_column, pa.string())]).empty_table()
    return pa.concat_tables(parts)
