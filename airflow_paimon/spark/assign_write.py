"""assign-and-write on Spark, the frame every bucket mode shares: find an earlier commit of this run, refuse
what cannot be written, read and validate the source, run the bucket mode's pipeline (spark/pipelines/:
cross-partition, dynamic, fixed, append), stage the commit messages it wrote and their counters.
"""
from __future__ import annotations

import logging

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.dynamic import check_dynamic_table
from airflow_paimon.engine.assign.fixed import check_fixed_table
from airflow_paimon.engine.bucket_mode import BucketMode
from airflow_paimon.engine.commit.committer import find_commit
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.overwrite import WRITE_MODES
from airflow_paimon.engine.commit.staging import Staged, stage
from airflow_paimon.engine.context import WriteContext, check_cross_partition_table
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.index.keys import encode_partition_values
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.store import staged_shards
from airflow_paimon.engine.plan import buckets_at
from airflow_paimon.engine.table import get_table
from airflow_paimon.spark.pipelines import PIPELINES
from airflow_paimon.spark.routing import without_adaptive_execution
from airflow_paimon.spark.source import read_source, validate_and_cast, validation_errors

log = logging.getLogger(__name__)


def staging_uri(staging_root: str, identifier: str, commit_user: str) -> str:
    return storage.join(staging_root, validate_identifier(identifier), commit_user)


def run_assign_and_write(spark, spec: dict) -> dict:
    identifier = spec["table"]
    table = get_table(spec["catalog_options"], identifier)
    base, index_uri = spec["base_snapshot_id"], spec.get("index_uri")
    mode = BucketMode.of(table)
    ident = CommitIdentity.for_run(spec["dag_id"], spec["run_id"], identifier)
    staged_at = staging_uri(spec["staging_root"], identifier, ident.commit_user)
    result = {"table": identifier, "base_snapshot_id": base, "commit_user": ident.commit_user,
              "commit_identifier": ident.commit_identifier, "staging_uri": staged_at}

    done = find_commit(table, ident.commit_user, ident.commit_identifier, base)
    if done is not None:  # a retry after this run already committed: write nothing again
        log.info("run already committed as snapshot %s; nothing to write", done.id)
        return {**result, "rows_in": 0, "rows_written": 0, "deletes": 0, "moved_keys": 0, "files": 0,
                "already_committed": True}
    shards = _check_mode(table, identifier, mode, base, index_uri, spec)
    write_mode = check_write_mode(table, identifier, mode, spec.get("write_mode") or "upsert")
    row_kind_column = spec.get("row_kind_column") or table.table_schema.options.get("rowkind.field")
    source = validate_and_cast(read_source(spark, spec["source"], identifier), table, identifier, row_kind_column)
    storage.delete_dir(staged_at)  # a retried attempt starts clean; nothing here is committed yet
    ctx = WriteContext(spec["catalog_options"], identifier, base, index_uri or "", shards, staged_at)
    ctx.max_sequence_numbers = {(encode_partition_values(b.partition, ctx.partition_types), b.bucket):
                                b.max_sequence_number for b in buckets_at(table, ctx.base_snapshot())}

    with validation_errors(identifier), without_adaptive_execution(spark):
        written = PIPELINES[mode](source, ctx).collect()
    messages = [bytes(r["message"]) for r in written]
    crash_point("assign_write.before_stage")
    shard_counters = [d["counters"] for d in staged_shards(staged_at).values()]
    # every input row reaches one assign task (cross-partition) or one write task (the other modes)
    rows_in = (sum(c.get("rows_in", 0) for c in shard_counters) if mode is BucketMode.CROSS_PARTITION
               else sum(r["rows_in"] for r in written))
    counters = {"rows_in": rows_in, "rows_written": sum(r["rows_written"] for r in written),
                "deletes": sum(r["deletes"] for r in written), "files": sum(r["files"] for r in written),
                "moved_keys": sum(c.get("moved_keys", 0) for c in shard_counters)}
    stage(table, staged_at, Staged(identifier, base, ident.commit_user, ident.commit_identifier, [],
                                   extra={**counters, "index_uri": index_uri, "write_mode": write_mode}), messages)
    crash_point("assign_write.after_stage")
    log.info("staged %s commit messages for %s at %s", len(messages), identifier, staged_at)
    return {**result, **counters, "already_committed": False}


def check_write_mode(table, identifier: str, mode: BucketMode, write_mode: str) -> str:
    """``upsert`` for every bucket mode; ``overwrite`` (dynamic partition overwrite) for partitioned
    cross-partition and fixed-bucket tables."""
    if write_mode not in WRITE_MODES:
        raise ValidationError(identifier, f"write_mode must be one of {list(WRITE_MODES)}", value=write_mode)
    if write_mode == "overwrite":
        if not table.partition_keys:
            raise ValidationError(identifier, "write_mode 'overwrite' replaces partitions; the table has none",
                                  value=write_mode)
        if mode not in (BucketMode.CROSS_PARTITION, BucketMode.HASH_FIXED):
            raise ValidationError(identifier, f"write_mode 'overwrite' is supported for cross-partition and "
                                              f"fixed-bucket tables, not {mode.value}", value=write_mode)
    return write_mode


def _check_mode(table, identifier: str, mode: BucketMode, base, index_uri, spec) -> int:
    """Refuse what cannot be written before reading the source; returns the shard / assigner count."""
    if mode is BucketMode.APPEND:
        if spec.get("row_kind_column"):
            raise ValidationError(identifier, "an append-only table takes no row kinds (no primary key)",
                                  column=spec["row_kind_column"])
        return 1
    if mode is BucketMode.CROSS_PARTITION:
        check_cross_partition_table(table)
        manifest = read_manifest(index_uri, base) if index_uri else None
        if manifest is None:
            raise ValidationError(identifier, f"no published index at {index_uri} for snapshot {base}; "
                                              "re-run bootstrap-index")
        return manifest.shards
    if mode is BucketMode.HASH_FIXED:
        check_fixed_table(table)
        return 1
    if mode is BucketMode.HASH_DYNAMIC:
        check_dynamic_table(table)
        return max(1, int(spec.get("shards") or 1))
    raise ValidationError(identifier, f"bucket mode {mode.value} is not supported (use bucket -1 or a fixed "
                                      "bucket count)")
