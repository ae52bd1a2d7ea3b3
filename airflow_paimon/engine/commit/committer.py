"""Exactly-once commit of staged messages: find our own earlier commit first, refuse a stale index, commit
conditionally (the snapshot lands right after one the index is still right for, or not at all)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from airflow_paimon.engine.commit.compact_increment import (COMPACT, append_part, commit_compact_increment,
                                                           has_compact_increment)
from airflow_paimon.engine.commit.properties import REBASED_OVER
from airflow_paimon.engine.commit.overwrite import commit_overwrite, without_replaced_deletes
from airflow_paimon.engine.commit.rebase import rebase_conflict
from airflow_paimon.engine.commit.record import check_not_lost, drop_intent, record_intent, recorded_commit
from airflow_paimon.engine.commit.snapshot_commit import GuardedCommit
from airflow_paimon.engine.commit.staging import check_files_exist
from airflow_paimon.engine.commit.table_state import check_unchanged
from airflow_paimon.engine.errors import StaleIndexError, TransientError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.snapshot.history import check_base, commit_of, newest_first, since

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def find_commit(table: FileStoreTable, commit_user: str, commit_identifier: int, after_snapshot_id: int | None,
                recorded: bool = False):
    """The snapshot carrying this commit identity, looking only after ``after_snapshot_id``; None if absent.
    ``recorded``: also a commit whose snapshot expired, from its record (see ``find_commits``)."""
    return find_commits(table, {(commit_user, commit_identifier)}, after_snapshot_id, recorded)


def find_commits(table: FileStoreTable, identities, after_snapshot_id: int | None, recorded: bool = False):
    """The latest snapshot carrying one of ``identities`` ((commit user, commit identifier) pairs), looking only
    after ``after_snapshot_id`` (None: the whole history still kept); None if absent.

    ``recorded`` (a DAG run's identities, whose commits the commit job records: engine/commit/record.py): when the
    walk reaches an expired snapshot, the commit records answer for the expired ones, as a RecordedCommit
    (``expired``; no manifests to read). The kept history is read first: a table whose history reaches back
    to ``after_snapshot_id`` (or to snapshot 1) reads no record."""
    walk = newest_first(table, after=after_snapshot_id)
    found = next((snap for snap in walk if commit_of(snap) in identities), None)
    if found is None and recorded and walk.earliest_kept is not None:  # only a record knows an older commit
        found = recorded_commit(table, identities, after_snapshot_id, walk.earliest_kept)
        if found is None:  # nor an intent that may have landed unseen
            check_not_lost(table, identities, walk.earliest_kept)
    return found


def check_not_moved(table: FileStoreTable, base_snapshot_id: int | None, latest=None,
                    base_fingerprint: str | None = None,
                    rebase: Callable[[list], str | None] | None = None) -> list[int]:
    """Refuse if the base snapshot is no longer in the table's history (engine/snapshot/history.py), or if any
    non-COMPACT snapshot landed after the snapshot the index was bootstrapped at, up to ``latest`` (default: the latest
    now) — unless ``rebase(snapshots since the base)`` finds nothing they conflict in (engine/commit/rebase.py);
    returns the ids of the snapshots gone over then. COMPACT snapshots keep every key in its partition and bucket,
    so the index stays right across them — but not the files a write's own compaction of level 0 replaces, nor
    the row positions a deletion-vector write marked: in a table whose writes compact (deletion vectors,
    ``changelog-producer=lookup``, first-row) any snapshot in between is refused."""
    from airflow_paimon.engine.options import TableOptions

    writes_compact = TableOptions.of(table).compacts_level_0
    allowed = () if writes_compact else (COMPACT,)
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot() if latest is None else latest
    check_base(table, base_snapshot_id, base_fingerprint, latest)
    if latest is None or latest.id == (base_snapshot_id or 0):
        return []
    walk = since(table, base_snapshot_id, latest)
    landed = list(walk)
    stale = next((snap for snap in landed if snap.commit_kind not in allowed), None)
    if stale is None and walk.expired is None:
        return []
    why = None
    if rebase is not None and not writes_compact and walk.expired is None:  # an expired one cannot be read
        why = rebase(landed)
        if why is None:
            return [snap.id for snap in landed]
    sid, commit_kind, user = (stale.id, stale.commit_kind, stale.commit_user) if stale else \
        (walk.expired, "expired", "?")
    not_rebased = f"; not committed on top of it: {why}" if why else ""
    raise StaleIndexError(
        f"table {table.identifier.get_full_name()} changed since bootstrap at snapshot {base_snapshot_id}: "
        f"snapshot {sid} ({commit_kind}) by {user} took the snapshot this commit expected ({sid}){not_rebased}; "
        "nothing committed, re-run from bootstrap-index")


def commit_once(table: FileStoreTable, messages, commit_user: str, commit_identifier: int,
                base_snapshot_id: int | None, overwrite: bool = False, base_fingerprint: str | None = None,
                planned: dict | None = None,
                properties: dict[str, str] | None = None) -> tuple[int | None, bool, list[int]]:
    """Commit ``messages`` as one snapshot unless this identity already did; returns (snapshot id, already,
    the ids of other writers' snapshots it was committed on top of). ``overwrite``: an OVERWRITE snapshot
    replacing the partitions the messages write rows into (engine/commit/overwrite.py). ``properties``: the
    snapshot's properties (engine/commit/ordering.py).

    Raises StaleIndexError, with nothing committed, if a non-COMPACT snapshot of another commit landed after
    ``base_snapshot_id`` that this write conflicts with (engine/commit/rebase.py: an overwrite or a
    deletion-vector write always does), or the base (``base_fingerprint``) left the table's history;
    TableChangedError if the table's options or schema are no longer what the write ``planned`` for;
    MissingFileError if a new file is gone — each checked again against the exact snapshot each commit attempt
    builds on."""
    if overwrite:
        messages = without_replaced_deletes(table, messages)
    compact = [m for m in messages if has_compact_increment(m)]  # a deletion-vector write: APPEND, then COMPACT
    # recorded (positional, as tests/unit/commit/test_history.py forwards it): a retry after its snapshot expired
    existing = find_commit(table, commit_user, commit_identifier, base_snapshot_id, True)
    if existing is not None:
        if compact and existing.commit_kind != COMPACT:  # its APPEND landed, the COMPACT not yet: finish it (or
            # refuse, HalfCommittedError, when the buckets changed since; never write the batch again on top of it)
            return commit_compact_increment(table, compact, commit_user, commit_identifier, existing.id), False, []
        return existing.id, True, []
    messages = [append_part(m) for m in messages if not m.is_empty()]
    rebase = None if overwrite or compact else (lambda landed: rebase_conflict(table, landed, messages))
    rebased: list[int] = []

    properties = dict(properties or {})  # the snapshot is built from it after the guard: it names the rebase

    def guard(latest) -> None:
        rebased[:] = check_not_moved(table, base_snapshot_id, latest, base_fingerprint, rebase)
        properties.pop(REBASED_OVER, None)
        if rebased:
            properties[REBASED_OVER] = ",".join(map(str, rebased))
        check_unchanged(table, planned)
        check_files_exist(table, [*messages, *compact])

    if not messages:  # nothing to commit, but a stale base is still refused; else each attempt checks (below)
        guard(None)
        return base_snapshot_id, False, []
    def checked_then_intent(latest) -> None:  # what tells a retry whether the snapshot could have landed unseen
        guard(latest)
        record_intent(table, commit_user, commit_identifier)

    committer = GuardedCommit(table, commit_user, checked_then_intent)
    try:
        if overwrite:
            commit_overwrite(committer, table, messages, commit_identifier, properties)
        else:
            committer.commit(messages, commit_identifier, properties)
    except StaleIndexError:
        existing = find_commit(table, commit_user, commit_identifier, base_snapshot_id, True)
        if existing is None:  # not a concurrent attempt of this same run: someone else's commit
            drop_intent(table, commit_user, commit_identifier)  # nothing of this commit landed
            raise
        if compact and existing.commit_kind != COMPACT:  # that attempt's APPEND landed, its COMPACT not yet
            return commit_compact_increment(table, compact, commit_user, commit_identifier, existing.id), False, []
        return existing.id, True, []
    finally:
        committer.close()
    snap = find_commit(table, commit_user, commit_identifier, base_snapshot_id)
    if snap is None:  # never "committed" without the snapshot to show for it
        raise TransientError(f"table {table.identifier.get_full_name()}: the commit of {commit_user} finished but "
                             "no snapshot carries it; re-run the commit task")
    if compact:
        crash_point("commit.between_append_and_compact")
        return commit_compact_increment(table, compact, commit_user, commit_identifier, snap.id), False, []
    return snap.id, False, list(rebased)
