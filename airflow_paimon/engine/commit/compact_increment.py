"""The second snapshot of a deletion-vector or ``changelog-producer=lookup`` write, as Paimon's writers make it:
the APPEND snapshot adds the batch's records as level-0 files (which readers of a deletion-vector table skip), then
a COMPACT snapshot of the same commit identity lifts them above level 0 — re-levelled or rewritten, old files
replaced when a bucket is rewritten — swaps the buckets' deletion-vector index files and registers the lookup
changelog (engine/write/lookup_compact.py and engine/write/force_up_level_0.py build that increment; pypaimon
commits only one increment per snapshot, so it lands as its own snapshot, right after the APPEND)."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pypaimon.manifest.schema.manifest_entry import ManifestEntry
from pypaimon.table.row.generic_row import GenericRow

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.commit.snapshot_commit import GuardedCommit
from airflow_paimon.engine.commit.staging import check_files_exist
from airflow_paimon.engine.errors import StaleIndexError
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
    row positions its vectors mark are of the files at that snapshot); returns its id."""
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

    def right_after_append(latest) -> None:
        # by identity, not id: after a rollback another writer's snapshot may carry the APPEND's id
        ours = latest is not None and (latest.commit_user, latest.commit_identifier) == (commit_user, commit_identifier)
        if latest is None or latest.id != append_snapshot_id or not ours:
            raise StaleIndexError(
                f"table {table.identifier.get_full_name()}: snapshot {latest.id if latest else None} landed after "
                f"this write's APPEND snapshot {append_snapshot_id}, before its COMPACT; the write's level-0 files "
                "stay invisible to deletion-vector readers (and without its lookup changelog) until "
                "PaimonCompactOperator(full=True) compacts them")
        check_files_exist(table, messages, "file of the write's compaction")

    committer = GuardedCommit(table, commit_user, right_after_append)
    try:
        # no conflict scan (it reads every entry of the changed partitions): the guard lets the snapshot land only
        # on the APPEND, and the files it deletes are that APPEND's or were live at its base, with nothing between
        try_commit(committer, commit_kind=COMPACT, commit_identifier=commit_identifier,
                   commit_entries_plan=lambda _latest: entries, detect_conflicts=False, changelog_entries=changelog,
                   index_adds=[e for m in messages for e in m.compact_index_adds],
                   index_deletes=[e for m in messages for e in m.compact_index_deletes])
    finally:
        committer.close()
    return append_snapshot_id + 1
