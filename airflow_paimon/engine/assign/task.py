"""One assign task: a shard's source rows in, assigned rows out (the body of a Spark applyInArrow)."""
from __future__ import annotations

import tempfile

import pyarrow as pa

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.assigner import assign_shard
from airflow_paimon.engine.assign.buckets import BucketAssigner
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.shard import ShardIndex


def assign_task(ctx: WriteContext, shard: int, rows: pa.Table) -> tuple[pa.Table, dict]:
    """Assign one shard's rows; returns (rows to write, counters)."""
    manifest = read_manifest(ctx.index_uri)
    meta = manifest.shard(shard)
    with tempfile.TemporaryDirectory(prefix="paimon-shard-") as tmp, ShardIndex(tmp) as index:
        if meta.file:
            local = f"{tmp}/{meta.file}"
            storage.download(storage.join(ctx.index_uri, meta.file), local)
            index.ingest([local])
        buckets = BucketAssigner(shard, ctx.shards, ctx.target_row_num, meta.bucket_counts)
        result = assign_shard(ctx.conform(rows), partition_fields=ctx.partition_keys, partition_types=ctx.partition_types,
                              index=index, buckets=buckets, merge_engine=ctx.merge_engine)
    counters = {"rows_in": result.rows_in, "deletes": result.deletes, "moved_keys": result.moved_keys,
                "dropped": result.dropped}
    return result.rows, counters
