"""Fixed buckets (bucket > 0): the bucket is a hash of the row's bucket key; then one writer per bucket."""
from __future__ import annotations

import pyarrow as pa

from airflow_paimon.engine.assign.assigner import BUCKET
from airflow_paimon.engine.assign.fixed import fixed_buckets
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.spark.pipelines.common import with_columns, write_buckets


def pipeline(source, ctx: WriteContext):
    from pyspark.sql.types import IntegerType, StructField

    table = ctx.table()
    bucketed = with_columns(source, lambda b: [pa.array(fixed_buckets(table, b), pa.int32())],
                            [StructField(BUCKET, IntegerType(), False)])
    return write_buckets(bucketed, ctx)
