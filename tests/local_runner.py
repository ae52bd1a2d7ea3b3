"""Runs the jobs' engine orchestrations in-process (engine/index/run.py, engine/write/run.py,
engine/commit/run.py), with the tasks the Spark glue distributes run one after another here — for fast
engine tests. The Spark glue itself is tested in tests/spark and tests/dag."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.assigner import BUCKET, KEY, ORDER, ROW_KIND
from airflow_paimon.engine.assign.fixed import fixed_buckets
from airflow_paimon.engine.assign.task import assign_task
from airflow_paimon.engine.commit.run import run_commit
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.index.run import bootstrap_index, shards_in
from airflow_paimon.engine.index.sharding import shard_of
from airflow_paimon.engine.shapes import CROSS_PARTITION, HASH_DYNAMIC, HASH_FIXED, TableShape
from airflow_paimon.engine.specs import (AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitSpec)
from airflow_paimon.engine.write.run import assign_and_write
from airflow_paimon.engine.write.task import write_task


class LocalIndexTasks:
    """engine/index/run.py IndexTasks, in this process."""

    parallelism = 1

    def rebuild(self, build, parts: int):
        return [meta for part in range(parts) for meta in build(part)]

    def catch_up(self, read_file, files: int, apply, shards: int):
        rows = pa.concat_tables([read_file(i) for i in range(files)])
        return [apply(shard, shard_rows) for shard, shard_rows in shards_in(rows)]


def bootstrap_result(catalog_options, identifier, index_root, shards) -> BootstrapResult:
    """The bootstrap-index job."""
    return bootstrap_index(BootstrapSpec(catalog_options=catalog_options, table=identifier, shards=shards,
                                         index_root=index_root), LocalIndexTasks())


def bootstrap(catalog_options, identifier, index_root, shards) -> WriteContext:
    """The bootstrap-index job; its result as the context the next run writes against."""
    boot = bootstrap_result(catalog_options, identifier, index_root, shards)
    ctx = WriteContext(catalog_options, identifier, boot.base_snapshot_id, boot.index_uri, shards)
    ctx.staging_root = index_root.rstrip("/").rsplit("/", 1)[0] + "/staging"  # fixed-bucket tables have no index
    return ctx


def stage_run(ctx: WriteContext, source: pa.Table, run_id: str = "run", row_kinds=None,
              write_mode: str = "upsert", schema_evolution: str = "none") -> CommitSpec:
    """The assign-and-write job on ``source`` (row kinds: ``row_kinds``, default all +I); returns the commit
    job's spec."""
    written = write_run(ctx, source, run_id, row_kinds, write_mode, schema_evolution)
    return CommitSpec.after(written, catalog_options=ctx.catalog_options, table=ctx.identifier,
                            staging_root=ctx.staging_root)


def write_run(ctx: WriteContext, source: pa.Table, run_id: str = "run", row_kinds=None,
              write_mode: str = "upsert", schema_evolution: str = "none", write=None) -> AssignWriteResult:
    """The assign-and-write job on ``source``; its result. ``write``: instead of the in-process pipeline."""
    staging_root = ctx.staging_root
    spec = AssignWriteSpec(catalog_options=ctx.catalog_options, table=ctx.identifier, source={}, shards=ctx.shards,
                           base_snapshot_id=ctx.base_snapshot_id, index_uri=ctx.index_uri,
                           staging_root=staging_root, dag_id="test", run_id=run_id, write_mode=write_mode,
                           schema_evolution=schema_evolution)

    def read(table, row_kind_column):
        n = source.num_rows
        kinds = np.zeros(n, np.int8) if row_kinds is None else row_kinds
        return (source.append_column(KEY, encode_keys(source, list(table.primary_keys)))
                .append_column(ORDER, pa.array(np.arange(n), pa.int64()))
                .append_column(ROW_KIND, pa.array(kinds, pa.int8())))

    return assign_and_write(spec, read=read, write=write or _assign_then_write, source_schema=lambda: source.schema)


def _fixed_buckets(source: pa.Table, ctx: WriteContext) -> pa.Table:
    """The bucket key's hash, as spark/pipelines/fixed.py."""
    return source.append_column(BUCKET, pa.array(fixed_buckets(ctx.table(), source), pa.int32()))


def _cross_partition(source: pa.Table, ctx: WriteContext) -> pa.Table:
    """Assigned per shard against the index, as spark/pipelines/cross_partition.py."""
    shard = shard_of(source, ctx.primary_keys, ctx.shards)
    return pa.concat_tables([assign_task(ctx, s, source.filter(pa.array(shard == s)))[0]
                             for s in range(ctx.shards) if (shard == s).any()])


def _dynamic_buckets(source: pa.Table, ctx: WriteContext) -> pa.Table:
    """One assigner against the HASH index, rows in arrival order, as spark/pipelines/dynamic.py with one shard."""
    from airflow_paimon.engine.assign.dynamic import HashBucketAssigner

    rows = source.take(pc.sort_indices(source.column(ORDER)))
    buckets = HashBucketAssigner(ctx.table(), ctx.base_snapshot()).assign(rows)
    return rows.append_column(BUCKET, pa.array(buckets, pa.int32()))


ASSIGNERS = {HASH_FIXED.name: _fixed_buckets, CROSS_PARTITION.name: _cross_partition,  # by shape, as PIPELINES
             HASH_DYNAMIC.name: _dynamic_buckets}


def _assign_then_write(source: pa.Table, ctx: WriteContext, shape: TableShape) -> list[dict]:
    """The shape's assignment, as the Spark pipelines do it; then write per (partition, bucket)."""
    if shape.name not in ASSIGNERS:
        raise NotImplementedError(f"the local runner writes {', '.join(ASSIGNERS)} tables, not {shape.name}")
    assigned = ASSIGNERS[shape.name](source, ctx)
    written = []
    for group in assigned.group_by(ctx.partition_keys + [BUCKET]).aggregate([]).to_pylist():
        mask = None
        for k, v in group.items():
            m = pc.equal(assigned.column(k), v) if v is not None else pc.is_null(assigned.column(k))
            mask = m if mask is None else pc.and_(mask, m)
        rows = assigned.filter(mask)
        message, counters = write_task(ctx, rows)
        written.append({"message": message, **counters, "rows_in": rows.num_rows})
    return written


def upsert(ctx: WriteContext, source: pa.Table, run_id: str = "run", row_kinds=None, write_mode: str = "upsert",
           schema_evolution: str = "none"):
    """Stage and commit one run; (snapshot id, already committed)."""
    result = run_commit(stage_run(ctx, source, run_id, row_kinds, write_mode, schema_evolution))
    return result.snapshot_id, result.already_committed
