"""One compaction, end to end on the driver: find an earlier commit of this run, plan, have the buckets
rewritten (by whoever ``execute`` is: Spark tasks, or a loop in tests), commit one COMPACT snapshot."""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from airflow_paimon.engine.commit.committer import find_commit
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.staging import decode_message, encode_message
from airflow_paimon.engine.compact.commit import (commit_compaction, counters_from_snapshot, counters_of,
                                                 discard_outputs)
from airflow_paimon.engine.compact.plan import (BucketCompaction, plan_compaction, write_commits,
                                                writes_since_compaction)
from airflow_paimon.engine.compact.rewrite import rewrite_bucket
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.jobs.specs import SCOPES, CompactResult, CompactSpec
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.options.checks import check_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)


def compaction_identity(dag_id: str, run_id: str, identifier: str, generation: int = 0) -> CommitIdentity:
    """Distinct from the write's identity of the same run, so both snapshots can be found; a cleared run's
    (``generation`` > 0) distinct from its earlier compaction, so that one is not taken for this one's."""
    return CommitIdentity.for_run(dag_id, run_id, identifier + ":compact", generation)


def compact_task(table: FileStoreTable, work: BucketCompaction) -> bytes:
    """What one Spark task does: rewrite one bucket, return its encoded CommitMessage."""
    return encode_message(table, rewrite_bucket(table, work))


def run_compaction(table: FileStoreTable, identity: CommitIdentity, input_snapshot_id: int | None, *,
                   full: bool = False,
                   scope: str = "snapshot", partition_filter: dict | None = None,
                   execute: Callable[[list[BucketCompaction]], list[bytes]] | None) -> dict | None:
    """Compact ``table``; returns the compact XCom dict (snapshot_id is the input id when nothing was due).
    ``execute`` None: decide from metadata only — None when buckets would have to be rewritten."""
    identifier = table.identifier.get_full_name()
    _validate(table, scope, partition_filter)
    result = {"table": identifier, "base_snapshot_id": input_snapshot_id}
    done = find_commit(table, identity.commit_user, identity.commit_identifier, input_snapshot_id)
    if done is not None:  # a retry after this run's compaction committed
        return {**result, "snapshot_id": done.id, **counters_from_snapshot(done), "already_committed": True}
    nothing = {**result, "snapshot_id": input_snapshot_id, "compacted_buckets": 0, "files_before": 0,
               "files_after": 0, "already_committed": False}
    scope_snapshots = None
    if scope == "snapshot":  # the buckets written since the last compaction, up to the input snapshot
        if input_snapshot_id is None:
            return nothing
        scope_snapshots = writes_since_compaction(table, input_snapshot_id)
    every = TableOptions.of(table).compaction.full_compaction_delta_commits
    if not full and every is not None and input_snapshot_id is not None:
        since_full = writes_since_compaction(table, input_snapshot_id, full_only=True)
        if write_commits(since_full) >= every:  # Paimon's full-compaction.delta-commits: this one is full
            full = True
            scope_snapshots = since_full if scope == "snapshot" else None
    plan = plan_compaction(table, latest_snapshot(table), full, scope_snapshots, partition_filter)
    if not plan.buckets:
        log.debug("%s: nothing to compact", identifier)
        return nothing
    if execute is None:
        return None
    messages = [decode_message(table, m) for m in execute(plan.buckets)]
    crash_point("compact.before_commit")
    try:
        snapshot_id = commit_compaction(table, plan, messages, identity.commit_user, identity.commit_identifier)
    except Exception:
        # An uncertain commit may still have landed: its files are then live and must stay.
        if find_commit(table, identity.commit_user, identity.commit_identifier, plan.snapshot_id) is None:
            discard_outputs(table, plan, messages)
        raise
    crash_point("compact.after_commit")
    return {**result, "snapshot_id": snapshot_id, **counters_of(messages), "already_committed": False}


def _validate(table: FileStoreTable, scope: str, partition_filter: dict | None) -> None:
    identifier = table.identifier.get_full_name()
    if not table.primary_keys:
        raise ValidationError(identifier, "compaction here is for primary-key tables only")
    if scope not in SCOPES:
        raise ValidationError(identifier, f"unknown compaction scope (use one of {SCOPES})", value=scope)
    for key in partition_filter or {}:
        if key not in table.partition_keys:
            raise ValidationError(identifier, "partition filter names a column that is not a partition key",
                                  column=key)
    check_table(table, compaction=True)  # its own options, maybe set by another engine


def compact(spec: CompactSpec, execute: Callable[[FileStoreTable, list[BucketCompaction]], list[bytes]] | None
            ) -> CompactResult | None:
    """The compact job on ``spec``: ``execute(table, work)`` rewrites the planned buckets (Spark tasks, or a loop
    in tests); None: decide from table metadata only (None when buckets must be rewritten)."""
    from airflow_paimon.engine.table.table import get_table

    table = get_table(spec.catalog_options, spec.table)
    result = run_compaction(table, compaction_identity(spec.dag_id, spec.run_id, spec.table, spec.generation),
                            spec.snapshot_id, full=spec.full, scope=spec.scope, partition_filter=spec.partition_filter,
                            execute=None if execute is None else lambda work: execute(table, work))
    return None if result is None else CompactResult.from_dict({**result, "table": spec.table})


def decide_compaction(spec: CompactSpec) -> CompactResult | None:
    """The compact job's result when table metadata decides it (nothing due, or this run's compaction committed
    by an earlier try), without rewriting anything; None when buckets must be rewritten (the job's work)."""
    result = compact(spec, execute=None)
    return None if result is None else replace(result, decided_by="metadata")
