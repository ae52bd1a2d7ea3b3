"""Snapshot expiry as Paimon's ExpireSnapshotsImpl decides it: keep at least ``snapshot.num-retained.min``,
at most ``snapshot.num-retained.max``, and every snapshot younger than ``snapshot.time-retained``; expire at
most ``snapshot.expire.limit`` per run. Then delete what only the expired snapshots needed.

A snapshot a streaming consumer will read next (``consumer/consumer-<id>``, ``nextSnapshot``) or after is
never expired, as in Paimon (ConsumerManager.minNextSnapshot). Tables with branches are refused: a branch's
snapshots may need the main branch's files and this expiry only reads the main branch.

A file is deleted only if no retained snapshot and no tag needs it (see references.py). Order as in Paimon:
data files, then manifests, then snapshot files, then the EARLIEST hint — so a crash part way leaves
snapshots that a re-run expires again, never a retained snapshot with a missing file.
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.jobs.specs import ExpireResult
from airflow_paimon.engine.options import ExpireOptions

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)


def expire_until(snapshots: list, options: ExpireOptions, now_ms: int) -> int:
    """The first snapshot id to keep: every snapshot below it expires."""
    earliest, latest = snapshots[0].id, snapshots[-1].id
    lowest_kept_by_max = max(latest - options.retain_max + 1, earliest)
    end = min(latest - options.retain_min + 1, earliest + options.limit)
    older_than = now_ms - options.time_retained_ms
    for snap in snapshots:
        # beyond retain_max a snapshot goes whatever its age; otherwise the first young one stops expiry
        if lowest_kept_by_max <= snap.id < end and snap.time_millis >= older_than:
            return max(snap.id, earliest)
    return max(end, earliest)


def expire_snapshots(table: FileStoreTable, options: ExpireOptions, now_ms: int | None = None,
                     dry_run: bool = False) -> ExpireResult:
    """Expire snapshots of ``table``; returns the counts (the job's result)."""
    if table.branch_manager().branches():
        raise ValidationError(table.identifier.get_full_name(), "has branches; snapshot expiry here only knows the "
                              "main branch")
    manager = table.snapshot_manager()
    snapshots = manager.list_snapshots()
    result = ExpireResult(table=table.identifier.get_full_name(), expired_snapshots=0, deleted_data_files=0,
                          deleted_metadata_files=0, earliest_snapshot_id=snapshots[0].id if snapshots else None,
                          dry_run=dry_run)
    if not snapshots:
        return result
    end = expire_until(snapshots, options, int(time.time() * 1000) if now_ms is None else now_ms)
    consumed = table.consumer_manager().min_next_snapshot()
    if consumed is not None:  # a consumer reads consumed next: it and every later snapshot stay
        end = max(min(end, consumed), snapshots[0].id)
    expired = [s for s in snapshots if s.id < end]
    if not expired:
        return result
    retained = [s for s in snapshots if s.id >= end]
    reader = SnapshotReader(table)
    needed = reader.needed_by(retained) | reader.needed_by_tags()
    # A file leaves the table in some delta of snapshots (earliest, end]; a re-levelled file is re-added in the
    # same delta and is then needed by the retained snapshots, so the set difference keeps it.
    data = set()
    for snap in snapshots:
        if expired[0].id < snap.id <= end:
            data |= {p for e in reader.delta_entries(snap) if e.kind == FileKind.DELETE for p in reader.data_paths(e)}
    for snap in expired:
        data |= {p for e in reader.changelog_entries(snap) for p in reader.data_paths(e)}
    metadata = set().union(*(reader.metadata_files(s) for s in expired))
    data, metadata = data - needed.data, metadata - needed.metadata
    result = replace(result, expired_snapshots=len(expired), deleted_data_files=len(data),
                     deleted_metadata_files=len(metadata), earliest_snapshot_id=end)
    if dry_run:
        return result
    file_io = table.file_io
    for path in sorted(data):
        file_io.delete_quietly(path)
    for path in sorted(metadata):
        file_io.delete_quietly(path)
    for snap in expired:
        file_io.delete_quietly(manager.get_snapshot_path(snap.id))
    file_io.overwrite_file_utf8(f"{manager.snapshot_dir}/EARLIEST", str(end))
    log.debug("%s: expired snapshots %s..%s", result.table, expired[0].id, expired[-1].id)
    return result
