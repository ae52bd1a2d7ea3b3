"""A base is a snapshot, not an id.

A run starts from a snapshot (bootstrap-index's latest, a compaction's plan) and later commits on top of it. A
rollback deletes snapshots and lets the next commits reuse their ids, so "snapshot N is still there" does not
mean "the snapshot this run read is still there". Each base therefore travels as (id, fingerprint), the
fingerprint being what tells snapshot N from a later snapshot N: who committed it and when.

Every walk over the history goes through ``newest_first`` (from the latest, or an id, back) or ``since`` (the
snapshots on top of a base, oldest first): one ``Walk`` that reads a snapshot only when reached and ends at the
first one expired, saying which."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from airflow_paimon.engine.errors import RolledBackError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from airflow_paimon.table_files import TableFiles


# What tells snapshot N from a later snapshot that reuses the id N after a rollback (a sensor's cursor carries
# the same fields: engine/snapshot/snapshots.py)
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


# --- walking the history ------------------------------------------------------------------------------------------

def commit_of(snapshot) -> tuple[str, int]:
    """(commit_user, commit_identifier): the commit a snapshot (or a commit record) carries
    (engine/commit/identity.py)."""
    return snapshot.commit_user, snapshot.commit_identifier


class Walk:
    """The snapshots of ``ids``, in that order, read one small file each as the walk goes (a caller that stops
    early reads no more), ending at the first id not kept: ``expired`` then holds it. Expiry deletes the oldest
    snapshots first, so newest first that is where the kept history ends (``earliest_kept`` is the id after it);
    oldest first it is where the chain from the start is broken. Each snapshot carries its ``commit_kind``, its
    commit (``commit_of``) and ``properties``. Iterated once."""

    def __init__(self, manager, ids: range, latest=None):
        self._manager, self._latest, self.ids = manager, latest, ids
        self.expired: int | None = None

    def __iter__(self) -> Iterator:
        for sid in self.ids:
            latest = self._latest is not None and sid == self._latest.id
            snap = self._latest if latest else self._manager.get_snapshot_by_id(sid)
            if snap is None:
                self.expired = sid
                return
            yield snap

    @property
    def earliest_kept(self) -> int | None:
        """The first snapshot still kept, once a newest-first walk reached the end of the kept history (None: it did
        not, it stopped at its lower bound or the caller stopped it)."""
        return None if self.expired is None else self.expired + 1


def newest_first(table: FileStoreTable | TableFiles, start: int | None = None, after: int | None = None,
                 latest=None) -> Walk:
    """The kept snapshots with ids in (``after``, ``start``], newest first. ``start``: default the latest
    snapshot (``latest`` if given, else read now); ``after``: default none, down to the earliest kept one.
    ``latest`` (the snapshot a caller already holds) is not read again."""
    manager = table.snapshot_manager()
    if start is None:
        latest = manager.get_latest_snapshot() if latest is None else latest
        start = latest.id if latest is not None else 0
    return Walk(manager, range(start, after or 0, -1), latest)


def since(table: FileStoreTable | TableFiles, after: int | None, latest) -> Walk:
    """The snapshots that landed on top of snapshot ``after`` (None: of an empty table) up to ``latest`` (a
    snapshot, not read again; None: none), oldest first."""
    return Walk(table.snapshot_manager(), range((after or 0) + 1, (latest.id if latest is not None else 0) + 1),
                latest)


def first_of_commit(table: FileStoreTable, snapshot, first: int | None = None) -> int:
    """The id of the first snapshot of ``snapshot``'s commit: a deletion-vector or lookup write is an APPEND and a
    COMPACT of one commit (engine/commit/compact_increment.py). ``first``: an id of that commit to walk back from
    (default ``snapshot``'s; a commit record's ``first_id``)."""
    first = snapshot.id if first is None else first
    for before in newest_first(table, start=first - 1):
        if commit_of(before) != commit_of(snapshot):
            break
        first = before.id
    return first
