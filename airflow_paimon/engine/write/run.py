"""One assign-and-write, the same for every bucket mode and every executor (the Spark job, the tests' local
runner): find an earlier commit of this run, refuse what cannot be written, read the source, let the
executor assign and write it, stage the commit messages and their counters for the commit task."""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Sequence

from airflow_paimon.engine import layout
from airflow_paimon.engine.commit.committer import find_commit
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.overwrite import WRITE_MODES
from airflow_paimon.engine.commit.staging import Staged, stage
from airflow_paimon.engine.commit.table_state import planned_state
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.history import check_base
from airflow_paimon.engine.codec.keys import encode_partition_values
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.store import staged_shards
from airflow_paimon.engine.scan import buckets_at, live_entries
from airflow_paimon.engine.schema_evolution import evolve_for_source
from airflow_paimon.engine.shapes import TableShape, shape_of, shapes_taking
from airflow_paimon.engine.specs import AssignWriteResult, AssignWriteSpec
from airflow_paimon.engine.table import get_table
from airflow_paimon.engine.table_options import check_table
from airflow_paimon.engine.write import planned_columns
from airflow_paimon.engine.write.deletion_vectors import check_no_level_0, live_files_by_bucket

log = logging.getLogger(__name__)

# What a write task reports for one (partition, bucket): its encoded CommitMessage and counters
Written = Mapping[str, Any]  # message, rows_written, deletes, files, rows_in
WRITE_COUNTERS = ("rows_written", "deletes", "files")


def assign_and_write(spec: AssignWriteSpec, *, read: Callable[[Any, str | None, tuple[str, ...]], Any],
                     write: Callable[[Any, WriteContext, TableShape], Sequence[Written]],
                     source_schema: Callable[[], Any] | None = None) -> AssignWriteResult:
    """``read(table, row_kind_column, absent)``: the validated source, with the table columns ``absent`` (added
    by another writer since this run planned: engine/schema_evolution.py) as nulls; ``write(source, ctx,
    shape)``: assign and write it (the executor's pipeline for ``shape.name``), one Written per write task;
    ``source_schema()``: the source's Arrow schema, for schema evolution. Nothing is staged before both
    succeeded."""
    identifier = spec.table
    table = get_table(spec.catalog_options, identifier)
    shape = shape_of(table)
    ident = CommitIdentity.for_run(spec.dag_id, spec.run_id, identifier)
    staged_at = layout.staging_dir(spec.staging_root, identifier, ident.commit_user)
    result = {"table": identifier, "base_snapshot_id": spec.base_snapshot_id, "commit_user": ident.commit_user,
              "commit_identifier": ident.commit_identifier, "staging_uri": staged_at,
              "base_snapshot_fingerprint": spec.base_snapshot_fingerprint}

    done = find_commit(table, ident.commit_user, ident.commit_identifier, spec.base_snapshot_id)
    if done is not None:  # a retry after this run already committed: write nothing again
        log.info("run already committed as snapshot %s; nothing to write", done.id)
        return AssignWriteResult(**result, rows_in=0, rows_written=0, deletes=0, moved_keys=0, files=0,
                                 already_committed=True)
    # the base must still be the snapshot bootstrap-index read: after a rollback its id may name another one
    check_base(table, spec.base_snapshot_id, spec.base_snapshot_fingerprint)
    check_table(table)  # its own options, maybe set by another engine since the bootstrap
    shards = shape.write_shards(table, spec)
    write_mode = check_write_mode(table, identifier, shape, spec.write_mode or "upsert")
    planned = planned_columns.start_clean(staged_at)  # a retried attempt starts clean; nothing here is committed yet
    # a new schema, if any, before anything is staged
    table, absent = evolve_for_source(spec, table, source_schema, planned,
                                      lambda columns: planned_columns.record(staged_at, columns))
    source = read(table, spec.row_kind_column or table.table_schema.options.get("rowkind.field"), absent)
    ctx = WriteContext(spec.catalog_options, identifier, spec.base_snapshot_id, spec.index_uri or "", shards,
                       staged_at, schema_id=table.table_schema.id, write_mode=write_mode)
    if shape.needs_index:
        ctx.shared_buckets = read_manifest(ctx.index_uri, ctx.base_snapshot_id).shares_buckets()
    entries = live_entries(table, ctx.base_snapshot())  # one manifest scan for both uses below
    ctx.max_sequence_numbers = {(encode_partition_values(b.partition, ctx.partition_types), b.bucket):
                                b.max_sequence_number for b in buckets_at(table, ctx.base_snapshot(), entries)}
    if ctx.compacts_level_0:  # each write task looks up its bucket's old rows in these files
        ctx.bucket_files = live_files_by_bucket(table, ctx.base_snapshot(), ctx.partition_types, entries)
    if ctx.deletion_vectors:
        check_no_level_0(identifier, (f.level for files in ctx.bucket_files.values() for f in files))

    written = write(source, ctx, shape)
    messages = [bytes(w["message"]) for w in written]
    crash_point("assign_write.before_stage")
    shard_counters = [d["counters"] for d in staged_shards(staged_at).values()]
    # every input row reaches one assign task (merged there) or one write task
    rows_in = (sum(c.get("rows_in", 0) for c in shard_counters) if shape.merged_upstream
               else sum(w["rows_in"] for w in written))
    counters = {"rows_in": rows_in, **{k: sum(w[k] for w in written) for k in WRITE_COUNTERS},
                "moved_keys": sum(c.get("moved_keys", 0) for c in shard_counters),
                "new_keys": (sum(c.get("new_keys", 0) for c in shard_counters)
                             if shape.needs_index else None)}
    stage(table, staged_at, Staged(identifier, spec.base_snapshot_id, ident.commit_user, ident.commit_identifier,
                                   [], extra={**counters, "index_uri": spec.index_uri, "write_mode": write_mode},
                                   base_snapshot_fingerprint=spec.base_snapshot_fingerprint,
                                   planned=planned_state(table)), messages)
    crash_point("assign_write.after_stage")
    log.debug("staged %s commit messages for %s at %s", len(messages), identifier, staged_at)
    return AssignWriteResult(**result, **counters, already_committed=False)


def check_write_mode(table, identifier: str, shape: TableShape, write_mode: str) -> str:
    """``upsert`` for every shape; ``overwrite`` (dynamic partition overwrite) for partitioned tables of the
    shapes that take it."""
    if write_mode not in WRITE_MODES:
        raise ValidationError(identifier, f"write_mode must be one of {list(WRITE_MODES)}", value=write_mode)
    if write_mode == "overwrite" and not table.partition_keys:
        raise ValidationError(identifier, "write_mode 'overwrite' replaces partitions; the table has none",
                              value=write_mode)
    if write_mode not in shape.write_modes:
        taking = " and ".join(s.label for s in shapes_taking(write_mode))
        raise ValidationError(identifier, f"write_mode {write_mode!r} is supported for {taking} tables, "
                                          f"not {shape.name}", value=write_mode)
    return write_mode
