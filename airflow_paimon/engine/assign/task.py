"""One assign task: a shard's source rows in, assigned rows out (run by the Spark task the shard is routed to).

The shard's changes are staged next to the run's commit messages; the commit task publishes them as the
index of the snapshot it commits.
"""
from __future__ import annotations

import tempfile

import pyarrow as pa

from airflow_paimon.engine.assign.assigner import assign_shard
from airflow_paimon.engine.assign.buckets import BucketAssigner
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.store import export_changes, load_shard, stage_shard


def assign_task(ctx: WriteContext, shard: int, rows: pa.Table) -> tuple[pa.Table, dict]:
    """Assign one shard's rows; returns (rows to write, counters)."""
    meta = read_manifest(ctx.index_uri, ctx.base_snapshot_id).shard(shard)
    with tempfile.TemporaryDirectory(prefix="paimon-shard-") as tmp:
        with load_shard(ctx.index_uri, meta, tmp, ctx.index_options) as index:
            buckets = BucketAssigner(shard, ctx.shards, ctx.target_row_num, meta.bucket_counts)
            result = assign_shard(ctx.conform(rows), partition_fields=ctx.partition_keys,
                                  partition_types=ctx.partition_types, index=index, buckets=buckets,
                                  rules=ctx.merge_rules, identifier=ctx.identifier)
            local, file_type, entries = export_changes(index, meta, tmp)
            counters = {"rows_in": result.rows_in, "moved_keys": result.moved_keys, "dropped": result.dropped,
                        "removed_keys": result.removed_keys, "new_keys": result.new_keys}
            stage_shard(ctx.staging_uri, shard, local, file_type, entries,
                        meta.keys + result.new_keys - result.removed_keys, buckets.to_dict(), counters)
    return result.rows, counters
