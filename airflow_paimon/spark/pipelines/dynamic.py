"""Dynamic buckets (bucket -1, the key holds every partition field): each row goes to Paimon's assigner of its
key, which assigns against Paimon's HASH index; then one writer per bucket."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.assigner import BUCKET, ORDER
from airflow_paimon.engine.assign.dynamic import HashBucketAssigner, assigner_of, key_hashes, partition_hashes
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.spark.pipelines.common import (SHARD, per_shard, route_fields, shard_and_route, with_columns,
                                                   write_buckets)
from airflow_paimon.spark.routing import ROUTE, routes


def pipeline(source, ctx: WriteContext):
    from pyspark.sql.types import IntegerType, StructField, StructType

    table, n, route = ctx.table(), ctx.shards, routes(ctx.shards)

    def assigner(batch):
        return shard_and_route(assigner_of(partition_hashes(table, batch), key_hashes(table, batch), n, n), route)

    routed = with_columns(source, assigner, route_fields())
    out = StructType([f for f in routed.schema.fields if f.name not in (SHARD, ROUTE)]
                     + [StructField(BUCKET, IntegerType(), False)])

    def assign(i: int, rows: pa.Table) -> pa.Table:
        rows = ctx.conform(rows)
        rows = rows.take(pc.sort_indices(rows.column(ORDER)))  # arrival order fills buckets
        buckets = HashBucketAssigner(ctx.table(), ctx.base_snapshot(), num_channels=n, num_assigners=n,
                                     assign_id=i).assign(rows)
        return rows.append_column(BUCKET, pa.array(buckets, pa.int32())).select(out.names)

    return write_buckets(per_shard(routed, n, assign, out), ctx)
