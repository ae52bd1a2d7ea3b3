"""The second snapshot of a deletion-vector or ``changelog-producer=lookup`` write, as Paimon's writers make it:
the APPEND snapshot adds the batch's records as level-0 files (which readers of a deletion-vector table skip), then
a COMPACT snapshot of the same commit identity lifts them above level 0 — re-levelled or rewritten, old files
replaced when a bucket is rewritten — swaps the buckets' deletion-vector index files and registers the lookup
changelog (engine/write/lookup_compact.py and engine/write/force_up_level_0.py build that increment; pypaimon
commits only one increment per snapshot, so it lands as its own snapshot, right after the APPEND).

A commit cut between the two (a killed task) leaves the APPEND in the table: its retry lands the COMPACT on top of
whatever landed since when none of those snapshots changed the write's buckets (their files or index files), and
otherwise refuses (HalfCommittedError: neither retried nor written again, which would apply the batch twice)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.table.row.generic_row import GenericRow

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.commit.snapshot_commit import GuardedCommit
from airflow_paimon.engine.commit.staging import check_files_exist
from airflow_paimon.engine.errors import HalfCommittedError, MissingFileError, StaleIndexError, TransientError
from airflow_paimon.engine.snapshot.history import commit_of, newest_first, since
from airflow_paimon.engine.paimon_compat import try_commit

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

COMPACT = "COMPACT"


def has_compact_increment(message) -> bool:
    return bool(message.compact_before or message.compact_after or message.compact_index_adds
                or message.compact_index_deletes or message.compact_changelog_files)


def append_part(message):
    """``message`` without its compact increment (what pypaimon's append commit takes)."""
    return dataclasses.replace(message, compact_before=[], compact_after=[], compact_changelog_files=[],
                               compact_index_adds=[], compact_index_deletes=[])


def commit_compact_increment(table: FileStoreTable, messages, commit_user: str, commit_identifier: int,
                             append_snapshot_id: int
                             ) -> int:
    """The COMPACT snapshot of ``messages``' compact increments, landing right after ``append_snapshot_id`` (the
    row positions its vectors mark are of the files at that snapshot), or on top of later snapshots that changed
    none of the write's buckets (a retry after the commit was cut between the two); returns its id.

    Raises HalfCommittedError (not retried, not written again: the APPEND is in the table) when a later snapshot
    changed one of those buckets, or a file of the compaction is gone; StaleIndexError when the APPEND itself left
    the table's history (rolled back)."""
    entries, changelog = [], []
    for m in messages:
        partition = GenericRow(list(m.partition), table.partition_keys_fields)
        total = m.total_buckets if m.total_buckets is not None else table.total_buckets
        entries += [ManifestEntry(kind=FileKind.DELETE, partition=partition, bucket=m.bucket, total_buckets=total,
                                  file=f) for f in m.compact_before]
        entries += [ManifestEntry(kind=FileKind.ADD, partition=partition, bucket=m.bucket, total_buckets=total,
                                  file=f) for f in m.compact_after]
        changelog += [ManifestEntry(kind=FileKind.ADD, partition=partition, bucket=m.bucket, total_buckets=total,
                                    file=f) for f in m.compact_changelog_files]  # changelog-producer lookup

    identity = (commit_user, commit_identifier)
    buckets = {(tuple(m.partition), m.bucket) for m in messages}

    def on_the_append(latest) -> None:
        manager = table.snapshot_manager()
        append = latest if latest is not None and latest.id == append_snapshot_id else \
            manager.get_snapshot_by_id(append_snapshot_id)
        # by identity, not id: after a rollback another writer's snapshot may carry the APPEND's id
        if latest is None or latest.id < append_snapshot_id or (
                append is not None and (append.commit_user, append.commit_identifier) != identity):
            raise StaleIndexError(  # the APPEND is gone: nothing of the write is in the table
                f"table {table.identifier.get_full_name()}: this write's APPEND snapshot {append_snapshot_id} is "
                "no longer in the table's history (rolled back); nothing committed, re-run from bootstrap-index")
        if latest.id != append_snapshot_id:
            why = changed_buckets(table, append, latest, buckets)
            if why is not None:
                raise HalfCommittedError(
                    f"table {table.identifier.get_full_name()}: this write's APPEND snapshot {append_snapshot_id} "
                    f"landed, its COMPACT did not, and {why}, so its COMPACT cannot land any more; the write is in "
                    "the table and is not written again (that would apply it twice), but its level-0 files stay "
                    "invisible to deletion-vector readers (and without its lookup changelog) until a full "
                    "compaction, PaimonCompactOperator(full=True), compacts them")
        try:
            check_files_exist(table, messages, "file of the write's compaction",
                              rerun="a full compaction, PaimonCompactOperator(full=True), which compacts the level-0 "
                                    f"files of this write's APPEND snapshot {append_snapshot_id} (not written again)")
        except MissingFileError as e:  # its APPEND is in: a rewrite would apply the batch twice
            raise HalfCommittedError(str(e)) from None

    committer = GuardedCommit(table, commit_user, on_the_append)
    try:
        # no conflict scan (it reads every entry of the changed partitions): the guard lets the snapshot land only
        # where nothing since the APPEND changed its buckets, so the files it deletes are that APPEND's or were live
        # at its base, and the row positions its vectors mark are of those files
        try_commit(committer, commit_kind=COMPACT, commit_identifier=commit_identifier,
                   commit_entries_plan=lambda _latest: entries, detect_conflicts=False, changelog_entries=changelog,
                   index_adds=[e for m in messages for e in m.compact_index_adds],
                   index_deletes=[e for m in messages for e in m.compact_index_deletes])
    finally:
        committer.close()
    landed = table.snapshot_manager().get_latest_snapshot()
    # the COMPACT just committed: the latest, unless another landed on it already
    walk = newest_first(table, start=landed.id if landed is not None else append_snapshot_id + 1,
                        after=append_snapshot_id, latest=landed)
    ours = next((s for s in walk if (*commit_of(s), s.commit_kind) == (*identity, COMPACT)), None)
    if ours is not None:
        return ours.id
    raise TransientError(f"table {table.identifier.get_full_name()}: the COMPACT of {commit_user} finished but no "
                         "snapshot carries it; re-run the commit task")


def changed_buckets(table: FileStoreTable, append, latest, buckets: set[tuple[tuple, int]]) -> str | None:
    """What the snapshots after ``append`` up to ``latest`` changed in ``buckets`` ((partition, bucket)): a data
    file added or deleted, or an index file (deletion vectors, a bucket index) other than at ``append``; None when
    nothing, so a COMPACT planned at ``append`` lands on ``latest`` as it would have on ``append``."""
    from airflow_paimon.engine.files.scan import delta_entries

    if append is None:  # expired: what changed since cannot be read
        return "its APPEND snapshot expired since"
    walk = since(table, append.id, latest)
    for snap in walk:
        sid = snap.id
        hit = next((e for e in delta_entries(table, snap) if (tuple(e.partition.values), e.bucket) in buckets), None)
        if hit is not None:
            return (f"snapshot {sid} ({snap.commit_kind} by {snap.commit_user}) changed its bucket {hit.bucket} of "
                    f"partition {list(hit.partition.values)}")
    if walk.expired is not None:
        return f"snapshot {walk.expired} in between expired"
    if _index_files(table, append, buckets) != _index_files(table, latest, buckets):
        return f"the index files of its buckets changed by snapshot {latest.id}"
    return None


def _index_files(table: FileStoreTable, snapshot, buckets: set[tuple[tuple, int]]) -> set[tuple]:
    """The index files of ``buckets`` at ``snapshot``: (partition, bucket, file name)."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile

    if not snapshot.index_manifest:
        return set()
    return {(tuple(e.partition.values), e.bucket, e.index_file.file_name)
            for e in IndexManifestFile(table).read(snapshot.index_manifest)
            if e.kind == FileKind.ADD and (tuple(e.partition.values), e.bucket) in buckets}
