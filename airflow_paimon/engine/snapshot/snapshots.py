"""Snapshot discovery without Spark: is there a snapshot newer than N (of a given commit kind)?

Read through pypaimon's SnapshotManager, so ``snapshot/LATEST`` and the snapshot files are reached with the
table's own file IO (local, or the object store configured by the ``paimon`` connection's catalog options).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.snapshot.history import IDENTITY, newest_first

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from airflow_paimon.table_files import TableFiles

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
        raise ConfigError(f"commit_kinds must be a non-empty subset of {COMMIT_KINDS}, not {list(kinds)}")
    return kinds


def latest_snapshot_id(table: TableFiles | FileStoreTable) -> int:
    """The latest snapshot id, 0 for a table without snapshots."""
    latest = table.snapshot_manager().get_latest_snapshot()
    return latest.id if latest else 0


def newer_snapshot(table: TableFiles | FileStoreTable, identifier: str, after_id: int,
                   commit_kinds: tuple[str, ...] | None = None
                   ) -> tuple[dict | None, int]:
    """(the newest snapshot with id > ``after_id`` and a kind in ``commit_kinds`` — or None —, the id scanned up
    to). The second value is where the next poll may start: snapshots up to it need not be read again.
    Snapshots already expired between ``after_id`` and the latest cannot be read: the search ends at the first."""
    latest = table.snapshot_manager().get_latest_snapshot()
    if latest is None or latest.id <= after_id:
        return None, after_id
    # newest match first; one small file per snapshot
    found = next((s for s in newest_first(table, after=after_id, latest=latest)
                  if commit_kinds is None or s.commit_kind in commit_kinds), None)
    return (snapshot_summary(identifier, found) if found is not None else None), latest.id


# --- cursors: "after snapshot N", and rollbacks below N -----------------------------------------------------------

def parse_cursor(value) -> dict:
    """A consumer's cursor "after snapshot N" (``{"snapshot_id", "commit_user", "commit_identifier",
    "time_millis"}``) from what a template or an XCom gives: an id (or its text), or a snapshot summary (a
    sensor's XCom; or its JSON text, ``| tojson``), which carries the snapshot's identity."""
    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("{") else int(text)
    given = value if isinstance(value, dict) else {"snapshot_id": value}
    snapshot_id = int(given["snapshot_id"])
    if snapshot_id < 0:
        raise ConfigError(f"a snapshot cursor must be >= 0, not {snapshot_id}")
    return {"snapshot_id": snapshot_id, **{k: given.get(k) for k in IDENTITY}}


def cursor_of(snapshot) -> dict:
    return {"snapshot_id": snapshot.id, **{field: getattr(snapshot, field) for field in IDENTITY}}


def cursor_at(table: TableFiles | FileStoreTable, snapshot_id: int) -> dict:
    """The cursor after ``snapshot_id`` with the identity of the snapshot that has that id now, if any."""
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id) if snapshot_id else None
    return cursor_of(snapshot) if snapshot is not None else parse_cursor(snapshot_id)


def resume_point(table: TableFiles | FileStoreTable, cursor: dict) -> tuple[dict, int | None]:
    """(the cursor to go on from, None); or, when the table was rolled back below the cursor's snapshot, (the
    cursor after the snapshot it was rolled back to, the cursor's id) — say so: rollback_note.

    Rolled back: the latest id is below the cursor's, or the snapshot with the cursor's id is another one (its
    commit user, identifier or time differ: a commit after the rollback reused the id; going on by id would skip
    the commits up to it). The rollback kept the snapshots committed no later than the cursor's, so the newest
    of those is the one rolled back to (writers' clocks must agree to within the time between the cursor's
    snapshot and the rollback). A bare id has no identity: only a latest id below it is seen, and the latest
    is taken."""
    n = cursor["snapshot_id"]
    if n == 0:
        return cursor, None
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    latest_id = latest.id if latest else 0
    if latest_id >= n:
        at = manager.get_snapshot_by_id(n)
        if at is None or cursor["time_millis"] is None or cursor_of(at) == cursor:
            return cursor, None  # the same snapshot (or expired, or no identity to compare: as before)
    if cursor["time_millis"] is None:
        return (cursor_of(latest) if latest else parse_cursor(0)), n
    walk = newest_first(table, start=min(n, latest_id), latest=latest)
    kept = next((s for s in walk if s.time_millis <= cursor["time_millis"]), None)
    if kept is not None:
        return cursor_of(kept), n
    # none: resume where the table's history starts (expired below the rollback), or from the start
    return parse_cursor(walk.expired or 0), n


def rollback_note(identifier: str, rolled_from: int, resumed: dict) -> str:
    return (f"table {identifier} was rolled back to snapshot {resumed['snapshot_id']} below the cursor "
            f"{rolled_from}; resuming from {resumed['snapshot_id']} (the rows of the rolled-back snapshots are "
            "not read again, and not read as deleted)")


def found_after(found: dict, cursor: dict, rolled_back_from: int | None) -> dict:
    """A sensor's / trigger's result: the snapshot found after ``cursor`` (where an incremental read starts)."""
    return {**found, "after_snapshot_id": cursor["snapshot_id"], "after_snapshot": cursor,
            "rolled_back_from": rolled_back_from}
