"""The COMPACT commit: every bucket's compact_before becomes DELETE entries and compact_after ADD entries of
one snapshot, exactly once per DAG run, refused when the table moved under the plan.

pypaimon's public commit() rejects compaction increments, so this goes through FileStoreCommit's internal
commit path with commit kind COMPACT (conflict detection on), as Java's FileStoreCommitImpl does; guarded so
that a retry never lands on a snapshot the conflict check has not seen.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pypaimon.manifest.schema.manifest_entry import ManifestEntry

from airflow_paimon.engine.commit.committer import COMPACT, find_commit
from airflow_paimon.engine.commit.snapshot_commit import GuardedCommit
from airflow_paimon.engine.commit.staging import check_files_exist
from airflow_paimon.engine.compact.plan import FULL_PROPERTY
from airflow_paimon.engine.errors import PaimonJobError, TransientError
from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.snapshot.history import check_base, since
from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.paimon_compat import try_commit
from airflow_paimon.engine.files.scan import file_path
from airflow_paimon.engine.options import TableOptions

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)
PROPERTY_PREFIX = "airflow-paimon.compact."
COUNTERS = ("compacted_buckets", "files_before", "files_after")


class CompactConflictError(PaimonJobError):
    """A concurrent commit changed a bucket being compacted; nothing was committed, a re-run plans again."""

    retryable: bool = True  # a lost race: the retry plans against the new latest snapshot


def compact_entries(plan, messages) -> list[ManifestEntry]:
    """DELETE entries (the planned manifest entries themselves) first, then ADD entries, per bucket.

    DELETE before ADD keeps a re-levelled file (same name, DELETE at the old level, ADD at the new one)
    recognisable to Paimon's snapshot expiry."""
    entries = []
    for m in messages:
        partition = tuple(m.partition)
        planned = [plan.entries[(partition, m.bucket, f.file_name, f.level)] for f in m.compact_before]
        entries += [ManifestEntry(kind=FileKind.DELETE, partition=e.partition, bucket=e.bucket,
                                  total_buckets=e.total_buckets, file=e.file) for e in planned]
        template = planned[0]
        entries += [ManifestEntry(kind=FileKind.ADD, partition=template.partition, bucket=m.bucket,
                                  total_buckets=template.total_buckets, file=f) for f in m.compact_after]
    return entries


def changelog_entries(plan, messages) -> list[ManifestEntry]:
    """ADD entries of the compaction's changelog files (``changelog-producer=full-compaction``), for the
    snapshot's changelog manifest list."""
    entries = []
    for m in messages:
        if m.compact_changelog_files:
            template = plan.entries[(tuple(m.partition), m.bucket, m.compact_before[0].file_name,
                                     m.compact_before[0].level)]
            entries += [ManifestEntry(kind=FileKind.ADD, partition=template.partition, bucket=m.bucket,
                                      total_buckets=template.total_buckets, file=f) for f in m.compact_changelog_files]
    return entries


def discard_outputs(table: FileStoreTable, plan, messages) -> None:
    """Delete the files a failed compaction wrote (never a re-levelled input: it is still live)."""
    inputs = {f.file_name for m in messages for f in m.compact_before}
    for e in [*compact_entries(plan, messages), *changelog_entries(plan, messages)]:
        if e.kind == FileKind.ADD and e.file.file_name not in inputs:
            table.file_io.delete_quietly(file_path(table, e))


def counters_of(messages) -> dict:
    return {"compacted_buckets": len(messages), "files_before": sum(len(m.compact_before) for m in messages),
            "files_after": sum(len(m.compact_after) for m in messages)}


def counters_from_snapshot(snapshot) -> dict:
    props = snapshot.properties or {}
    return {k: int(props.get(PROPERTY_PREFIX + k, 0)) for k in COUNTERS}


def check_no_conflict(table: FileStoreTable, plan, messages, latest=None) -> None:
    """Refuse if a snapshot after the plan, up to ``latest`` (default: the latest now), removed a picked file
    or added a file above level 0 to a bucket being compacted (a concurrent compaction: two outputs on one
    level would overlap)."""
    manager, name = table.snapshot_manager(), table.identifier.get_full_name()
    latest = manager.get_latest_snapshot() if latest is None else latest
    # a rollback below the plan: its picked files may be gone from the table, or never have been in it
    check_base(table, plan.snapshot_id, plan.snapshot_fingerprint, latest, started_at="the compaction's plan",
               error=CompactConflictError)
    if latest is None or latest.id == plan.snapshot_id:
        return
    buckets = {(tuple(m.partition), m.bucket) for m in messages}
    picked = set(plan.entries)
    any_snapshot = TableOptions.of(table).deletion_vectors
    reader = SnapshotReader(table)
    walk = since(table, plan.snapshot_id, latest)
    for snap in walk:
        sid = snap.id
        if any_snapshot:  # deletion vectors of the compacted files may have changed with it
            raise CompactConflictError(f"table {name}: snapshot {sid} ({snap.commit_kind} by {snap.commit_user}) "
                                       f"landed after compaction planned at snapshot {plan.snapshot_id}; in a "
                                       "deletion-vector table it may mark rows of the files compacted; nothing "
                                       "committed, re-run to plan again")
        for e in reader.delta_entries(snap):
            where = (tuple(e.partition.values), e.bucket)
            removed = e.kind == FileKind.DELETE and (*where, e.file.file_name, e.file.level) in picked
            stacked = e.kind == FileKind.ADD and where in buckets and e.file.level > 0
            if removed or stacked:
                what = (f"removed input file {e.file.file_name} of" if removed
                        else f"added a level-{e.file.level} file to")
                raise CompactConflictError(
                    f"table {name}: snapshot {sid} ({snap.commit_kind} by {snap.commit_user}) {what} partition "
                    f"{where[0]} bucket {where[1]} after compaction planned at snapshot {plan.snapshot_id}; nothing "
                    "committed, re-run to plan again")
    if walk.expired is not None:
        raise CompactConflictError(f"table {name}: snapshot {walk.expired} expired while compacting; "
                                   "nothing committed, re-run to plan again")


def commit_compaction(table: FileStoreTable, plan, messages, commit_user: str, commit_identifier: int) -> int:
    """Commit the compaction as one COMPACT snapshot; returns its id. Raises CompactConflictError."""
    messages = [m for m in messages if m.compact_before or m.compact_after]
    check_no_conflict(table, plan, messages)
    entries = compact_entries(plan, messages)
    props = {PROPERTY_PREFIX + k: str(v) for k, v in counters_of(messages).items()}
    if plan.full:  # full-compaction.delta-commits counts the writes since the last one
        props[FULL_PROPERTY] = "true"
    name = table.identifier.get_full_name()
    # every commit attempt re-checks the snapshots up to the one it builds on, and lands right after it
    def guard(latest) -> None:
        check_no_conflict(table, plan, messages, latest)
        check_files_exist(table, messages, "compacted file", rerun="the compaction")

    committer = GuardedCommit(table, commit_user, guard)
    try:
        try_commit(committer, commit_kind=COMPACT, commit_identifier=commit_identifier,
                   commit_entries_plan=lambda _latest: entries, detect_conflicts=True, snapshot_properties=props,
                   index_deletes=plan.index_deletes, changelog_entries=changelog_entries(plan, messages))
    except RuntimeError as e:
        if "conflict" not in str(e).lower():
            raise
        raise CompactConflictError(f"table {name}: {e}; nothing committed, re-run to plan again") from e
    finally:
        committer.close()
    snap = find_commit(table, commit_user, commit_identifier, plan.snapshot_id)
    if snap is None:
        raise TransientError(f"table {name}: COMPACT commit finished but its snapshot is not found")
    log.debug("%s: COMPACT snapshot %s (%s)", name, snap.id, counters_of(messages))
    return snap.id
