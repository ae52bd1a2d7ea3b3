"""Orphan-file removal (Paimon's OrphanFilesClean): delete files in the table directory that no snapshot
and no tag references and that are older than a safety margin — data of writes that never committed,
outputs of failed compactions, leftovers of interrupted expiries — plus this project's staged commits
of runs that never finished.

The margin protects work in flight: a write stages files before its commit references them, a compaction
rewrites files before its COMPACT commit names them, and every commit writes its manifests, manifest lists
and index files before the snapshot that names them; only files older than any of these could still be
pending (default one day, as Paimon's ``older_than``). The margin never drops below a floor of one hour,
whatever the caller asks: a zero margin once deleted a commit's fresh manifest lists in the moment before
its snapshot landed, and the table named files that were gone. A staged run (``staged.json`` under the
staging of the table) protects its data files whatever their age, until it is committed or abandoned
(older than the staging retention); its staging is dropped only then. The provider's commit records in the
table's directory (``airflow-paimon/commits``, engine/commit/record.py) are never judged: they are kept as long
as the table.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.commit.staging import abandoned, data_file_paths, load, runs
from airflow_paimon.engine.errors import CorruptTableError, ValidationError
from airflow_paimon.engine.maintenance.references import References, SnapshotReader, normalize
from airflow_paimon.engine.jobs.specs import MIN_ORPHAN_AGE_MS, STAGING_RETENTION_SECONDS, OrphansResult

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)
DEFAULT_OLDER_THAN_MS = 24 * 3600 * 1000
# Table metadata an orphan clean never touches: schema and snapshot files are the table itself; and the
# provider's commit records (engine/commit/record.py), which outlive the snapshots they name.
PROTECTED_DIRS = ("schema", "snapshot", "tag", "branch", "consumer", "statistics", "changelog",
                  layout.COMMIT_RECORDS[0])


def _files(uri: str) -> list[tuple[str, int, float | None]]:
    """(path, size, mtime in epoch seconds) of every file under the table directory ``uri`` outside its metadata
    directories; each path spelled as ``uri`` is (plain, file://, s3://), so deletes stay confined to it."""
    fs, root = storage.filesystem(uri)
    if fs.get_file_info(root).type == pafs.FileType.NotFound:
        return []
    found = []
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        relative = info.path[len(root):].lstrip("/")
        if info.type == pafs.FileType.File and relative.split("/", 1)[0] not in PROTECTED_DIRS:
            found.append((storage.join(uri, relative), info.size or 0,
                          info.mtime.timestamp() if info.mtime is not None else None))
    return found


def staged_references(table: FileStoreTable, table_staging: str, now_s: float) -> set[str]:
    """Data files of the runs staged under ``table_staging`` that are not abandoned yet."""
    refs = set()
    for uri in runs(table_staging):
        if storage.exists(layout.staged_file(uri)) and not abandoned(uri, now_s, STAGING_RETENTION_SECONDS):
            try:
                staged = load(table, uri)
            except (KeyError, ValueError) as e:
                raise CorruptTableError(f"table {table.identifier.get_full_name()}: staged run {uri} is unreadable "
                                        f"({type(e).__name__}: {e}); refusing to judge its files orphans") from e
            refs |= {normalize(p) for p in data_file_paths(table, staged.messages)}
    return refs


def _check_paths_line_up(table: FileStoreTable, listed: list[str], referenced: References) -> None:
    """Refuse when a listed file bears the name of a referenced one under another spelling (scheme, prefix): the
    listing and the snapshots disagree on paths, and every live file would pass for an orphan. Paimon's file
    names are unique (UUIDs), so the same name is the same file."""
    by_name = {p.rsplit("/", 1)[-1]: p for p in referenced.data | referenced.metadata}
    for path in listed:
        named = by_name.get(path.rsplit("/", 1)[-1])
        if named is not None and named != path:
            raise CorruptTableError(f"table {table.identifier.get_full_name()}: listed file {path} is referenced as "
                                    f"{named}; paths do not line up, refusing to delete")


def orphan_files(table: FileStoreTable, older_than_ms: int, staged: AbstractSet[str] = frozenset()
                 ) -> list[tuple[str, int]]:
    """Unreferenced files of the table last modified before ``older_than_ms`` (epoch millis), and before the
    floor (MIN_ORPHAN_AGE_MS ago) whatever ``older_than_ms`` is; ``staged``: data files of staged runs,
    referenced too."""
    if table.branch_manager().branches():
        raise ValidationError(table.identifier.get_full_name(), "has branches; orphan removal here only knows the main "
                              "branch")
    reader = SnapshotReader(table)  # snapshots first: a file a later commit adds is young, hence kept
    referenced = reader.needed_by(table.snapshot_manager().list_snapshots()) | reader.needed_by_tags()
    files = _files(table.table_path)
    listed = [normalize(p) for p, _, _ in files]
    _check_paths_line_up(table, listed, referenced)
    cut_off_s = min(older_than_ms, time.time() * 1000 - MIN_ORPHAN_AGE_MS) / 1000
    return [(p, size) for (p, size, mtime), key in zip(files, listed)
            if mtime is not None and mtime < cut_off_s and key not in referenced and key not in staged]


def stale_staging(table_staging: str, now_s: float, older_than_ms: int) -> list[str]:
    """Staged-commit directories of this table that are abandoned and not touched since ``older_than_ms``."""
    return [uri for uri in runs(table_staging) if abandoned(uri, now_s, STAGING_RETENTION_SECONDS)
            and storage.newest_mtime(uri) * 1000 < older_than_ms]


def remove_orphan_files(table: FileStoreTable, older_than_ms: int | None = None, staging_root: str | None = None,
                        dry_run: bool = False) -> OrphansResult:
    """Delete orphans (unless ``dry_run``); returns the counts and a sample (the job's result)."""
    if older_than_ms is None:
        older_than_ms = int(time.time() * 1000) - DEFAULT_OLDER_THAN_MS
    identifier, now_s = table.identifier.get_full_name(), time.time()
    table_staging = layout.staging_dir(staging_root, identifier) if staging_root else None
    protected = staged_references(table, table_staging, now_s) if table_staging else set()
    orphans = orphan_files(table, older_than_ms, protected)
    staged = stale_staging(table_staging, now_s, older_than_ms) if table_staging else []  # only once abandoned
    if not dry_run:
        for path, _ in orphans:
            storage.require_within(table.table_path, path)
            table.file_io.delete_quietly(path)
        if table_staging:  # stale runs are looked for only under a staging root
            for path in staged:
                storage.delete_dir_within(table_staging, path)
    log.debug("%s: %s orphan files (%s bytes), %s stale staging dirs%s", identifier, len(orphans),
              sum(s for _, s in orphans), len(staged), " (dry run)" if dry_run else "")
    return OrphansResult(table=identifier, orphan_files=len(orphans), orphan_bytes=sum(s for _, s in orphans),
                         stale_staging_dirs=len(staged), dry_run=dry_run, sample=[p for p, _ in orphans[:20]])
