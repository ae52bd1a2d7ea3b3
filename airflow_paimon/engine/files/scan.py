"""Planning on the driver, as Paimon's FileStoreScan: the live data files of a snapshot per (partition,
bucket), and the files a snapshot added. pypaimon's planning modules are imported only here, where planning
happens, so a Spark task that just reads files starts fast."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_paimon.engine.codec.kinds import FileKind

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


@dataclass(frozen=True)
class BucketFiles:
    partition: tuple
    bucket: int
    paths: tuple[str, ...]
    max_sequence_number: int
    row_count: int


def latest_snapshot(table: FileStoreTable):
    return table.snapshot_manager().get_latest_snapshot()


def live_entries(table: FileStoreTable, snapshot) -> list:
    """ManifestEntry of every live data file at ``snapshot`` (none for an empty table)."""
    if snapshot is None:
        return []
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.read.scanner.file_scanner import FileScanner

    manifests = ManifestListManager(table)
    return FileScanner(table, lambda: (manifests.read_all(snapshot), snapshot)).plan_files()


def file_path(table: FileStoreTable, entry) -> str:
    return data_file_path(table, tuple(entry.partition.values), entry.bucket, entry.file)


def data_file_path(table: FileStoreTable, partition: tuple, bucket: int, file) -> str:
    """Where the data file ``file`` (a DataFileMeta) of (``partition`` values, ``bucket``) lives."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    return file.external_path or canonical_data_file_path(table, tuple(partition), bucket, file.file_name)


def buckets_at(table: FileStoreTable, snapshot, entries: list | None = None) -> list[BucketFiles]:
    """Live files grouped per (partition, bucket), with each bucket's max sequence number. ``entries``: the
    snapshot's live_entries when the caller has them already (a manifest scan saved)."""
    groups: dict[tuple, list] = defaultdict(list)
    for e in live_entries(table, snapshot) if entries is None else entries:
        groups[(tuple(e.partition.values), e.bucket)].append(e)
    return [BucketFiles(p, b, tuple(file_path(table, e) for e in es),
                        max(e.file.max_sequence_number for e in es), sum(e.file.row_count for e in es))
            for (p, b), es in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))]


def delta_entries(table: FileStoreTable, snapshot) -> list:
    """ManifestEntry of every change ``snapshot`` made to the table's files (its delta manifests: ADD and DELETE)."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager
    from pypaimon.read.scanner.file_scanner import FileScanner

    manifests = ManifestListManager(table)
    return FileScanner(table, lambda: (manifests.read_delta(snapshot), snapshot)).read_manifest_entries(
        manifests.read_delta(snapshot))


def added_entries(table: FileStoreTable, snapshot) -> list:
    """ManifestEntry of the data files ``snapshot`` added (its delta manifests, ADD entries only)."""
    return [e for e in delta_entries(table, snapshot) if e.kind == FileKind.ADD]


def added_file_count(table: FileStoreTable, snapshot) -> int:
    """How many data files ``snapshot`` added: its delta manifest list's counters (one small file read)."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    return sum(m.num_added_files for m in ManifestListManager(table).read_delta(snapshot))
