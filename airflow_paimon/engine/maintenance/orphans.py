"""Orphan-file removal (Paimon's OrphanFilesClean): delete files in the table directory that no snapshot
and no tag references and that are older than a safety margin — data of writes that never committed,
outputs of failed compactions, leftovers of interrupted expiries — plus this project's staged commits
of runs that never finished.

The margin protects work in flight: a write stages files before its commit references them, so only files
older than any write could still be pending (default one day, as Paimon's ``older_than``). A staged run
(``staged.json`` under the staging of the table) protects its data files whatever their age, until it is
committed or abandoned (older than the staging retention); its staging is dropped only then.
"""
from __future__ import annotations

import logging
import time

import pyarrow.fs as pafs

from airflow_paimon.engine import layout, storage
from airflow_paimon.engine.commit.staging import data_file_paths, load
from airflow_paimon.engine.errors import PaimonJobError
from airflow_paimon.engine.maintenance.references import SnapshotReader, normalize
from airflow_paimon.engine.specs import STAGING_RETENTION_SECONDS

log = logging.getLogger(__name__)
DEFAULT_OLDER_THAN_MS = 24 * 3600 * 1000
# Table metadata an orphan clean never touches: schema and snapshot files are the table itself.
PROTECTED_DIRS = ("schema", "snapshot", "tag", "branch", "consumer", "statistics", "changelog")


def _files(uri: str, older_than_s: float) -> list[tuple[str, int]]:
    """(path, size) of every file under ``uri`` last modified before ``older_than_s``."""
    fs, root = storage.filesystem(uri)
    if fs.get_file_info(root).type == pafs.FileType.NotFound:
        return []
    found = []
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type == pafs.FileType.File and info.mtime is not None and info.mtime.timestamp() < older_than_s:
            relative = info.path[len(root):].lstrip("/")
            if relative.split("/", 1)[0] not in PROTECTED_DIRS:
                found.append((info.path, info.size or 0))
    return found


def staged_references(table, table_staging: str, now_s: float) -> set[str]:
    """Data files of the runs staged under ``table_staging`` that are not abandoned yet."""
    refs = set()
    for name in storage.list_dir(table_staging):
        uri = storage.join(table_staging, name)
        marker = layout.staged_file(uri)
        if storage.exists(marker) and now_s - storage.mtime(marker) <= STAGING_RETENTION_SECONDS:
            try:
                staged = load(table, uri)
            except (KeyError, ValueError) as e:
                raise PaimonJobError(f"table {table.identifier.get_full_name()}: staged run {uri} is unreadable "
                                     f"({type(e).__name__}: {e}); refusing to judge its files orphans") from e
            refs |= {normalize(p) for p in data_file_paths(table, staged.messages)}
    return refs


def orphan_files(table, older_than_ms: int, staged: set[str] = frozenset()) -> list[tuple[str, int]]:
    """Unreferenced files of the table older than ``older_than_ms`` (epoch millis); ``staged``: data files of
    staged runs, referenced too."""
    if table.branch_manager().branches():
        raise PaimonJobError(f"table {table.identifier.get_full_name()}: has branches; orphan removal here only "
                             "knows the main branch")
    reader = SnapshotReader(table)
    referenced = reader.needed_by(table.snapshot_manager().list_snapshots()) | reader.needed_by_tags()
    files = _files(table.table_path, older_than_ms / 1000)
    orphans = [(p, size) for p, size in files if normalize(p) not in referenced and normalize(p) not in staged]
    if files and len(orphans) == len(files) and referenced.data:
        # Every old file unreferenced while snapshots reference files: paths do not line up; delete nothing.
        raise PaimonJobError(f"table {table.identifier.get_full_name()}: no listed file matches a referenced "
                             f"path (e.g. {files[0][0]} vs {next(iter(referenced.data))}); refusing to delete")
    return orphans


def stale_staging(table_staging: str, older_than_ms: int) -> list[str]:
    """Staged-commit directories of this table not touched since ``older_than_ms``."""
    fs, root = storage.filesystem(table_staging)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        return []
    stale = []
    for d in fs.get_file_info(pafs.FileSelector(root)):
        if d.type == pafs.FileType.Directory:
            newest = max((f.mtime.timestamp() for f in fs.get_file_info(pafs.FileSelector(d.path, recursive=True))
                          if f.mtime is not None), default=0)
            if newest * 1000 < older_than_ms:
                stale.append(d.path)
    return stale


def remove_orphan_files(table, older_than_ms: int | None = None, staging_root: str | None = None,
                        dry_run: bool = False) -> dict:
    """Delete orphans (unless ``dry_run``); returns counters for XCom."""
    if older_than_ms is None:
        older_than_ms = int(time.time() * 1000) - DEFAULT_OLDER_THAN_MS
    identifier, now_s = table.identifier.get_full_name(), time.time()
    table_staging = layout.staging_dir(staging_root, identifier) if staging_root else None
    protected = staged_references(table, table_staging, now_s) if table_staging else set()
    orphans = orphan_files(table, older_than_ms, protected)
    # staging goes only once abandoned, however small older_than_ms is
    abandoned_ms = min(older_than_ms, int((now_s - STAGING_RETENTION_SECONDS) * 1000))
    staged = stale_staging(table_staging, abandoned_ms) if table_staging else []
    if not dry_run:
        for path, _ in orphans:
            storage.require_within(table.table_path, path)
            table.file_io.delete_quietly(path)
        for path in staged:
            storage.delete_dir_within(table_staging, path)
    log.debug("%s: %s orphan files (%s bytes), %s stale staging dirs%s", identifier, len(orphans),
              sum(s for _, s in orphans), len(staged), " (dry run)" if dry_run else "")
    return {"table": identifier, "orphan_files": len(orphans), "orphan_bytes": sum(s for _, s in orphans),
            "stale_staging_dirs": len(staged), "dry_run": dry_run,
            "sample": [p for p, _ in orphans[:20]]}
