"""assign-and-write on Spark. The source is read and validated on the driver, then per bucket mode:

- cross-partition: shuffle by key hash to the index shard, assign there against the global index and write;
- dynamic bucket: shuffle to Paimon's assigner of each key, assign against Paimon's HASH index;
- fixed bucket: the bucket is a hash of the row;
- append-only: pypaimon's writer per Spark partition.

Then (other modes) a shuffle by (partition, bucket) gives every bucket one writer; the driver stages the
commit messages.
"""
from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.assigner import BUCKET, KEY, ORDER
from airflow_paimon.engine.assign.dynamic import (HashBucketAssigner, assigner_of, check_dynamic_table, key_hashes,
                                                  partition_hashes)
from airflow_paimon.engine.assign.fixed import check_fixed_table, fixed_buckets
from airflow_paimon.engine.assign.task import assign_task
from airflow_paimon.engine.commit.committer import find_commit
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.staging import Staged, stage
from airflow_paimon.engine.context import WriteContext, check_cross_partition_table
from airflow_paimon.engine.errors import PaimonJobError, ValidationError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.index.keys import encode_keys, encode_partition_values
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.sharding import shard_of
from airflow_paimon.engine.index.store import staged_shards
from airflow_paimon.engine.plan import buckets_at
from airflow_paimon.engine.table import get_table
from airflow_paimon.engine.write.task import write_task
from airflow_paimon.spark.routing import (ROUTE, gather, groups, per_group, route_column, routes,
                                          without_adaptive_execution)
from airflow_paimon.spark.source import read_source, validate_and_cast, validation_errors

log = logging.getLogger(__name__)
SHARD = "_shard"
WRITTEN = "message binary, rows_written long, deletes long, files long, rows_in long"


def staging_uri(staging_root: str, identifier: str, commit_user: str) -> str:
    return storage.join(staging_root, identifier, commit_user)


def run_assign_and_write(spark, spec: dict) -> dict:
    identifier = spec["table"]
    table = get_table(spec["catalog_options"], identifier)
    base, index_uri = spec["base_snapshot_id"], spec.get("index_uri")
    mode = table.bucket_mode().name
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
    row_kind_column = spec.get("row_kind_column") or table.table_schema.options.get("rowkind.field")
    source = validate_and_cast(read_source(spark, spec["source"], identifier), table, identifier, row_kind_column)
    storage.delete_dir(staged_at)  # a retried attempt starts clean; nothing here is committed yet
    ctx = WriteContext(spec["catalog_options"], identifier, base, index_uri or "", shards, staged_at)
    ctx.max_sequence_numbers = {(encode_partition_values(b.partition, ctx.partition_types), b.bucket):
                                b.max_sequence_number for b in buckets_at(table, ctx.base_snapshot())}

    pipeline = {"CROSS_PARTITION": _cross_partition, "HASH_FIXED": _fixed, "HASH_DYNAMIC": _dynamic}.get(mode)
    with validation_errors(identifier), without_adaptive_execution(spark):
        written = (pipeline(source, ctx) if table.primary_keys else _append(source, ctx)).collect()
    messages = [bytes(r["message"]) for r in written]
    crash_point("assign_write.before_stage")
    shard_counters = [d["counters"] for d in staged_shards(staged_at).values()]
    # every input row reaches one assign task (cross-partition) or one write task (the other modes)
    rows_in = (sum(c.get("rows_in", 0) for c in shard_counters) if mode == "CROSS_PARTITION" and table.primary_keys
               else sum(r["rows_in"] for r in written))
    counters = {"rows_in": rows_in, "rows_written": sum(r["rows_written"] for r in written),
                "deletes": sum(r["deletes"] for r in written), "files": sum(r["files"] for r in written),
                "moved_keys": sum(c.get("moved_keys", 0) for c in shard_counters)}
    stage(table, staged_at, Staged(identifier, base, ident.commit_user, ident.commit_identifier, [],
                                   extra={**counters, "index_uri": index_uri}), messages)
    crash_point("assign_write.after_stage")
    log.info("staged %s commit messages for %s at %s", len(messages), identifier, staged_at)
    return {**result, **counters, "already_committed": False}


def _check_mode(table, identifier: str, mode: str, base, index_uri, spec) -> int:
    """Refuse what cannot be written before reading the source; returns the shard / assigner count."""
    if not table.primary_keys:
        if spec.get("row_kind_column"):
            raise ValidationError(identifier, "an append-only table takes no row kinds (no primary key)",
                                  column=spec["row_kind_column"])
        return 1
    if mode == "CROSS_PARTITION":
        check_cross_partition_table(table)
        manifest = read_manifest(index_uri, base) if index_uri else None
        if manifest is None:
            raise ValidationError(identifier, f"no published index at {index_uri} for snapshot {base}; "
                                              "re-run bootstrap-index")
        return manifest.shards
    if mode == "HASH_FIXED":
        check_fixed_table(table)
        return 1
    if mode == "HASH_DYNAMIC":
        check_dynamic_table(table)
        return max(1, int(spec.get("shards") or 1))
    raise ValidationError(identifier, f"bucket mode {mode} is not supported (use bucket -1 or a fixed bucket count)")


def _writer(ctx: WriteContext):
    def write(rows: pa.Table) -> pa.Table:
        message, counters = write_task(ctx, rows)
        return pa.table({"message": [message], "rows_written": [counters["rows_written"]],
                         "deletes": [counters["deletes"]], "files": [counters["files"]], "rows_in": [rows.num_rows]})
    return write


def _with_columns(df, fn, extra: list):
    """``df`` with columns computed per Arrow batch by ``fn(batch) -> list of arrays``."""
    from pyspark.sql.types import StructType

    schema = StructType(df.schema.fields + extra)

    def add(batches):
        for batch in batches:
            yield pa.RecordBatch.from_arrays(batch.columns + fn(batch), names=schema.names)

    return df.mapInArrow(add, schema)


def _route_fields():
    from pyspark.sql.types import IntegerType, StructField

    return [StructField(SHARD, IntegerType(), False), StructField(ROUTE, IntegerType(), False)]


def _shard_and_route(shard_ids: np.ndarray, route: np.ndarray) -> list[pa.Array]:
    return [pa.array(shard_ids, pa.int32()), route_column(shard_ids, route)]


def _per_shard(routed, n: int, fn, schema):
    """``fn(shard, rows)`` for each shard's rows, shard s in Spark task s (``routed`` has SHARD and ROUTE)."""
    def run(rows: pa.Table) -> pa.Table:
        return fn(rows.column(SHARD)[0].as_py(), rows.drop_columns([SHARD, ROUTE]))

    return routed.repartition(n, ROUTE).mapInArrow(per_group(run, [SHARD]), schema)


def _write_buckets(assigned, ctx: WriteContext):
    """One write per (partition, bucket), spread over the session's shuffle partitions."""
    n = int(assigned.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    columns = [*ctx.partition_keys, BUCKET]
    return assigned.repartition(n, *columns).mapInArrow(per_group(_writer(ctx), columns), WRITTEN)


def _cross_partition(source, ctx: WriteContext):
    """Spark's hash partitioning of the key columns gives the shard (engine/index/sharding.py), so rows reach
    their shard's task with no Python pass before the shuffle. Each task assigns its shards and writes the
    rows itself, one file per (partition, bucket) — no second shuffle. With fewer cores than shards a task
    takes several shards (pmod(h, shards) mod n == pmod(h, n) when n divides shards), which saves task
    start-ups and files.

    A shard owns the buckets it assigns (bucket % shards == shard), so a bucket normally has one writer.
    Keys another writer placed can give a bucket a file from several tasks in one commit: their keys are
    disjoint, and Paimon orders level-0 files of equal sequence numbers by name (Levels: "two or more jobs
    writing the same merge tree"). 100k rows into 5M here: 1.4 s against 1.7 s with a second shuffle."""
    from pyspark.sql import functions as F

    primary_keys, write, shards = ctx.primary_keys, _writer(ctx), ctx.shards
    tasks = task_count(shards, source.sparkSession.sparkContext.defaultParallelism)
    group_by = [*ctx.partition_keys, BUCKET]

    def assign_and_write(batches):
        from pyspark import TaskContext

        rows = gather(batches)
        if rows is None:
            return
        shard_ids = _shards_of_task(rows, primary_keys, ctx, TaskContext.get().partitionId(), tasks)
        rows = rows.append_column(KEY, encode_keys(rows, primary_keys))
        assigned = [assign_task(ctx, int(s), rows.filter(pa.array(shard_ids == s)))[0] for s in np.unique(shard_ids)]
        written = [write(b) for b in groups(pa.concat_tables(assigned), group_by)]
        crash_point("assign_write.task_written")
        if written:  # one batch back to the JVM for all the task's files rather than one per file
            yield from pa.concat_tables(written).to_batches()

    return source.repartition(tasks, *[F.col(k) for k in primary_keys]).mapInArrow(assign_and_write, WRITTEN)


def task_count(shards: int, parallelism: int) -> int:
    """Tasks for ``shards`` index shards: the most that divides the shard count and fits the cores."""
    return max(n for n in range(1, shards + 1) if shards % n == 0 and n <= max(1, parallelism))


def _shards_of_task(rows: pa.Table, primary_keys: list[str], ctx: WriteContext, task: int, tasks: int) -> np.ndarray:
    """Each row's shard. A key in the wrong task would be written twice: Spark's partitioning and shard_of()
    must agree on every row."""
    shard_ids = shard_of(rows, primary_keys, ctx.shards)
    wrong = int((shard_ids % tasks != task).sum())
    if wrong:
        raise PaimonJobError(f"table {ctx.identifier}: {wrong} rows reached Spark task {task} of {tasks} although "
                             "their key hashes elsewhere; Spark's hash partitioning and shard_of() disagree")
    return shard_ids


def _fixed(source, ctx: WriteContext):
    from pyspark.sql.types import IntegerType, StructField

    table = ctx.table()
    bucketed = _with_columns(source, lambda b: [pa.array(fixed_buckets(table, b), pa.int32())],
                             [StructField(BUCKET, IntegerType(), False)])
    return _write_buckets(bucketed, ctx)


def _dynamic(source, ctx: WriteContext):
    from pyspark.sql.types import IntegerType, StructField, StructType

    table, n, route = ctx.table(), ctx.shards, routes(ctx.shards)

    def assigner(batch):
        return _shard_and_route(assigner_of(partition_hashes(table, batch), key_hashes(table, batch), n, n), route)

    routed = _with_columns(source, assigner, _route_fields())
    out = StructType([f for f in routed.schema.fields if f.name not in (SHARD, ROUTE)]
                     + [StructField(BUCKET, IntegerType(), False)])

    def assign(i: int, rows: pa.Table) -> pa.Table:
        rows = ctx.conform(rows)
        rows = rows.take(pc.sort_indices(rows.column(ORDER)))  # arrival order fills buckets
        buckets = HashBucketAssigner(ctx.table(), ctx.base_snapshot(), num_channels=n, num_assigners=n,
                                     assign_id=i).assign(rows)
        return rows.append_column(BUCKET, pa.array(buckets, pa.int32())).select(out.names)

    return _write_buckets(_per_shard(routed, n, assign, out), ctx)


def _append(source, ctx: WriteContext):
    """Append-only tables: pypaimon's own writer per Spark partition; its commit messages are staged."""
    from airflow_paimon.engine.commit.staging import encode_message

    names = [f.name for f in ctx.arrow_schema]

    def write(batches):
        table = ctx.table()
        builder = table.new_batch_write_builder()
        writer = builder.new_write()
        rows = 0
        for batch in batches:
            batch = ctx.conform(pa.Table.from_batches([batch]).select(names))
            writer.write_arrow(batch)
            rows += batch.num_rows
        messages = writer.prepare_commit()
        writer.close()
        for m in messages:
            yield pa.RecordBatch.from_pydict({"message": [encode_message(table, m)], "rows_written": [rows],
                                              "deletes": [0], "files": [len(m.new_files)], "rows_in": [rows]})
            rows = 0

    # these tasks write as they read (no shuffle in between), so the source's checks run first, alone
    source.write.format("noop").mode("overwrite").save()
    return source.mapInArrow(write, WRITTEN)
