"""The one line a task logs when its job has finished: what the job did, in counts a person reads, e.g.

    assign-and-write demo.orders: 1,000 rows in, 500 new keys, 250 moved, 1,000 rows and 250 deletes written,
    12 files staged, 6.8 s      (one line)

Made from the job's result (engine/jobs/specs.py), the same dict the task returns to XCom; ``seconds`` is what the
task spent on the job, Spark's start included. One ``describe_*`` per job, named in its record in spark/job_registry.py
(``progress_line`` there makes the line).
"""
from __future__ import annotations

from airflow_paimon.engine.jobs.specs import (AssignWriteResult, BootstrapResult, CommitResult, CompactResult,
                                         ExpireResult, IncrementalReadResult, OrphansResult)


def describe_bootstrap(r: BootstrapResult) -> str:
    how = ", decided from table metadata (no Spark job)" if r.decided_by == "metadata" else ""
    if r.index_decision == "not_needed":
        return f"no global index needed ({r.reason}){how}"
    read = f", {r.data_files_read:,} data files read" if r.data_files_read else ""
    return (f"index {r.index_decision.replace('_', ' ')} {_at(r.base_snapshot_id)} ({r.reason}), "
            f"{r.keys:,} keys in {r.shards:,} shards{read}{how}")


def _at(snapshot_id: int | None) -> str:
    return "on the empty table" if snapshot_id is None else f"at snapshot {snapshot_id}"


def describe_assign_write(r: AssignWriteResult) -> str:
    if r.already_committed:
        return "already committed by an earlier try, nothing written"
    keys = f", {r.new_keys:,} new keys, {r.moved_keys:,} moved" if r.new_keys is not None else ""
    later = (f", {r.superseded_keys:,} keys left out (later runs of this DAG wrote them)"
             if r.superseded_keys else "")
    if r.superseded_keys_by_others:
        later += (f", {r.superseded_keys_by_others:,} keys left out (other DAGs' or run types' runs as of a later "
                  "instant wrote them)")
    return (f"{r.rows_in:,} rows in{keys}, {r.rows_written:,} rows and {r.deletes:,} deletes written, "
            f"{r.files:,} files staged{later}")


def describe_commit(r: CommitResult) -> str:
    if r.commit_kind is None:
        return f"nothing to commit, table stays {_at(r.snapshot_id)}"
    parts = [f"snapshot {r.snapshot_id} {r.commit_kind}"]
    if r.delta_record_count is not None:
        parts.append(f"{r.delta_record_count:,} records")
    if r.files is not None:
        parts.append(f"{r.files:,} files")
    if r.rebased_over:
        parts.append(f"on top of other writers' snapshots {', '.join(map(str, r.rebased_over))} (rebased)")
    if r.rewrites:
        parts.append(f"the batch written again {r.rewrites} time(s) first (the table moved under it)")
    return ", ".join(parts) + (" (committed by an earlier try)" if r.already_committed else "")


def describe_compact(r: CompactResult) -> str:
    if not r.compacted_buckets:
        how = ", decided from table metadata (no Spark job)" if r.decided_by == "metadata" else ""
        return f"nothing to compact {_at(r.snapshot_id)}{how}"
    return (f"snapshot {r.snapshot_id} COMPACT, {r.compacted_buckets:,} buckets, {r.files_before:,} files -> "
            f"{r.files_after:,}" + (" (committed by an earlier try)" if r.already_committed else ""))


def describe_expire(r: ExpireResult) -> str:
    verb = "would expire" if r.dry_run else "expired"
    return (f"{verb} {r.expired_snapshots:,} snapshots ({r.deleted_data_files:,} data files, "
            f"{r.deleted_metadata_files:,} metadata files), earliest snapshot {r.earliest_snapshot_id}")


def describe_orphans(r: OrphansResult) -> str:
    verb = "found" if r.dry_run else "removed"
    return (f"{verb} {r.orphan_files:,} orphan files ({r.orphan_bytes:,} bytes), "
            f"{r.stale_staging_dirs:,} stale staging dirs")


def describe_incremental_read(r: IncrementalReadResult) -> str:
    befores = f"{r.update_befores:,} update-befores, " if r.update_befores else ""
    # the task log says it even where the Spark driver's own log does not reach it
    rolled = (f" (the table was rolled back below the start {r.rolled_back_from}: read from {r.start_snapshot_id})"
              if r.rolled_back_from is not None else "")
    return (f"snapshots ({r.start_snapshot_id}, {r.end_snapshot_id}]{rolled}, {r.scan_mode}: {r.rows:,} rows "
            f"({r.inserts:,} inserts, {befores}{r.updates:,} updates, {r.deletes:,} deletes) from "
            f"{r.changed_partitions:,} partitions, {r.files:,} files")
