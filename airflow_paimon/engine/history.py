"""A base is a snapshot, not an id.

A run starts from a snapshot (bootstrap-index's latest, a compaction's plan) and later commits on top of it. A
rollback deletes snapshots and lets the next commits reuse their ids, so "snapshot N is still there" does not
mean "the snapshot this run read is still there". Each base therefore travels as (id, fingerprint), the
fingerprint being what tells snapshot N from a later snapshot N: who committed it and when."""
from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_paimon.engine.errors import RolledBackError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


# What tells snapshot N from a later snapshot that reuses the id N after a rollback (a sensor's cursor carries
# the same fields: engine/snapshots.py)
IDENTITY = ("commit_user", "commit_identifier", "time_millis")


def fingerprint(snapshot) -> str | None:
    """``commit_user:commit_identifier:time_millis`` of ``snapshot`` (None for no snapshot)."""
    if snapshot is None:
        return None
    return ":".join(str(getattr(snapshot, field)) for field in IDENTITY)


def check_base(table: FileStoreTable, base_id: int | None, base_fingerprint: str | None, latest=None,
               started_at: str = "bootstrap-index", error: type[Exception] = RolledBackError) -> None:
    """Raise ``error`` unless snapshot ``base_id`` — the very one fingerprinted — is still in the table's
    history at ``latest`` (default: the latest now). ``started_at`` names the step that read the base.
    No base (an empty table) has nothing to lose; a base without a fingerprint (a run staged by an earlier
    version) is checked by id only."""
    if base_id is None:
        return
    name = table.identifier.get_full_name()
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot() if latest is None else latest
    if latest is None or latest.id < base_id:
        raise error(
            f"table {name}: the latest snapshot is {latest.id if latest else 'none'}, older than snapshot {base_id} "
            f"that this run started from at {started_at}: the table was rolled back since; nothing committed, "
            f"re-run from {started_at}")
    if base_fingerprint is None:
        return
    now = latest if latest.id == base_id else manager.get_snapshot_by_id(base_id)
    if now is None:
        raise error(
            f"table {name}: snapshot {base_id} that this run started from at {started_at} is no longer in the "
            f"table's history (expired, or rolled back); nothing committed, re-run from {started_at}")
    if fingerprint(now) != base_fingerprint:
        raise error(
            f"table {name}: snapshot {base_id} is not the snapshot this run started from at {started_at} (that was "
            f"{base_fingerprint}, now it is {fingerprint(now)}): the table was rolled back and committed to again; "
            f"nothing committed, re-run from {started_at}")
