"""Exactly-once commit of staged messages: find our own earlier commit first, refuse a stale index, commit."""
from __future__ import annotations

from pypaimon.write.file_store_commit import FileStoreCommit

from airflow_paimon.engine.errors import StaleIndexError

COMPACT = "COMPACT"


def find_commit(table, commit_user: str, commit_identifier: int, after_snapshot_id: int | None):
    """The snapshot carrying this commit identity, looking only after ``after_snapshot_id``; None if absent."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None:
        return None
    for sid in range(latest.id, (after_snapshot_id or 0), -1):
        snap = manager.get_snapshot_by_id(sid)
        if snap is None:  # expired: nothing older can be ours
            break
        if snap.commit_user == commit_user and snap.commit_identifier == commit_identifier:
            return snap
    return None


def check_not_moved(table, base_snapshot_id: int | None) -> None:
    """Refuse if any non-COMPACT snapshot landed after the snapshot the index was bootstrapped at."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    if latest is None or latest.id == (base_snapshot_id or 0):
        return
    for sid in range((base_snapshot_id or 0) + 1, latest.id + 1):
        snap = manager.get_snapshot_by_id(sid)
        if snap is None or snap.commit_kind != COMPACT:
            kind = snap.commit_kind if snap else "expired"
            raise StaleIndexError(
                f"table {table.identifier.get_full_name()} changed since bootstrap at snapshot {base_snapshot_id}: "
                f"snapshot {sid} ({kind}) by {snap.commit_user if snap else '?'}; re-run from bootstrap-index")


def commit_once(table, messages, commit_user: str, commit_identifier: int,
                base_snapshot_id: int | None) -> tuple[int | None, bool]:
    """Commit ``messages`` as one snapshot unless this identity already did; returns (snapshot id, already)."""
    existing = find_commit(table, commit_user, commit_identifier, base_snapshot_id)
    if existing is not None:
        return existing.id, True
    check_not_moved(table, base_snapshot_id)
    if not any(not m.is_empty() for m in messages):
        return base_snapshot_id, False
    committer = FileStoreCommit(table.new_snapshot_commit(), table, commit_user)
    try:
        committer.commit([m for m in messages if not m.is_empty()], commit_identifier)
    finally:
        committer.close()
    snap = find_commit(table, commit_user, commit_identifier, base_snapshot_id)
    return (snap.id if snap else None), False
