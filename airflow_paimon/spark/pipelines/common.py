"""What the pipelines share: the WRITTEN schema, the write task as a Spark function, columns added per Arrow
batch, and the shuffle that gives every (partition, bucket) one writer."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.assign.assigner import BUCKET
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.write.task import write_task
from airflow_paimon.spark.routing import ROUTE, per_group, per_sorted_group, route_column

SHARD = "_shard"
WRITTEN = "message binary, rows_written long, deletes long, files long, rows_in long"


def writer(ctx: WriteContext):
    def write(rows: pa.Table) -> pa.Table:
        message, counters = write_task(ctx, rows)
        return pa.table({"message": [message], "rows_written": [counters["rows_written"]],
                         "deletes": [counters["deletes"]], "files": [counters["files"]], "rows_in": [rows.num_rows]})
    return write


def with_columns(df, fn, extra: list):
    """``df`` with columns computed per Arrow batch by ``fn(batch) -> list of arrays``."""
    from pyspark.sql.types import StructType

    schema = StructType(df.schema.fields + extra)

    def add(batches):
        for batch in batches:
            yield pa.RecordBatch.from_arrays(batch.columns + fn(batch), names=schema.names)

    return df.mapInArrow(add, schema)


def route_fields():
    from pyspark.sql.types import IntegerType, StructField

    return [StructField(SHARD, IntegerType(), False), StructField(ROUTE, IntegerType(), False)]


def shard_and_route(shard_ids: np.ndarray, route: np.ndarray) -> list[pa.Array]:
    return [pa.array(shard_ids, pa.int32()), route_column(shard_ids, route)]


def per_shard(routed, n: int, fn, schema):
    """``fn(shard, rows)`` for each shard's rows, shard s in Spark task s (``routed`` has SHARD and ROUTE)."""
    def run(rows: pa.Table) -> pa.Table:
        return fn(rows.column(SHARD)[0].as_py(), rows.drop_columns([SHARD, ROUTE]))

    return routed.repartition(n, ROUTE).mapInArrow(per_group(run, [SHARD]), schema)


def write_buckets(assigned, ctx: WriteContext):
    """One write per (partition, bucket), spread over the session's shuffle partitions; each task's rows sorted
    by bucket, so it holds one bucket's rows at a time (per_sorted_group), not its whole partition. The sort's
    price: 2M rows into 8 buckets × 10 partitions in-job, 3.1–3.2 s against 2.9–3.0 s (fixed), 4.6–4.7 s against
    4.3–4.5 s (dynamic)."""
    n = int(assigned.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    columns = [*ctx.partition_keys, BUCKET]
    return (assigned.repartition(n, *columns).sortWithinPartitions(*columns)
            .mapInArrow(per_sorted_group(writer(ctx), columns), WRITTEN))
