"""Snapshot discovery without Spark: is there a snapshot newer than N (of a given commit kind)?

Read through pypaimon's SnapshotManager, so ``snapshot/LATEST`` and the snapshot files are reached with the
table's own file IO (local, or the object store configured by the ``paimon`` connection's catalog options).
"""
from __future__ import annotations

from collections.abc import Iterable

COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")


def snapshot_summary(identifier: str, snapshot) -> dict:
    """What a sensor / downstream task needs of one snapshot (JSON-serialisable). ``changelog_record_count``:
    the rows of its changelog (None: it has no changelog files, so an incremental read of it is a diff)."""
    return {"table": identifier, "snapshot_id": snapshot.id, "commit_kind": snapshot.commit_kind,
            "commit_user": snapshot.commit_user, "commit_identifier": snapshot.commit_identifier,
            "time_millis": snapshot.time_millis, "delta_record_count": snapshot.delta_record_count,
            "total_record_count": snapshot.total_record_count,
            "changelog_record_count": snapshot.changelog_record_count if snapshot.changelog_manifest_list else None}


def check_commit_kinds(commit_kinds: Iterable[str] | None) -> tuple[str, ...] | None:
    if commit_kinds is None:
        return None
    kinds = (commit_kinds,) if isinstance(commit_kinds, str) else tuple(commit_kinds)
    unknown = [k for k in kinds if k not in COMMIT_KINDS]
    if unknown or not kinds:
        raise ValueError(f"commit_kinds must be a non-empty subset of {COMMIT_KINDS}, not {list(kinds)}")
    return kinds


def latest_snapshot_id(table) -> int:
    """The latest snapshot id, 0 for a table without snapshots."""
    latest = table.snapshot_manager().get_latest_snapshot()
    return latest.id if latest else 0


def newer_snapshot(table, identifier: str, after_id: int, commit_kinds: tuple[str, ...] | None = None
                   ) -> tuple[dict | None, int]:
    """(the newest snapshot with id > ``after_id`` and a kind in ``commit_kinds`` — or None —, the id scanned up
    to). The second value is where the next poll may start: snapshots up to it need not be read again.
    Snapshots already expired between ``after_id`` and the latest are skipped (they cannot be read)."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None or latest.id <= after_id:
        return None, after_id
    if commit_kinds is None or latest.commit_kind in commit_kinds:
        return snapshot_summary(identifier, latest), latest.id
    for snapshot_id in range(latest.id - 1, after_id, -1):  # newest match first; one small file per snapshot
        snapshot = manager.get_snapshot_by_id(snapshot_id)
        if snapshot is not None and snapshot.commit_kind in commit_kinds:
            return snapshot_summary(identifier, snapshot), latest.id
    return None, latest.id
