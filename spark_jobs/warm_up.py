"""The warm-up's spark-submit application (airflow_paimon/spark/warm_up.py): what our jobs' drivers do with Spark,
on a few rows, so that its JVM loads (and dumps at exit) the classes theirs load. ``driver-only``: nothing, as a
job without a Spark session (its JVM: the submit, the Python runner, the gateway); ``session``: a session reading
a parquet file, the validating projection, a left anti join, Arrow to the driver, and shuffles to Python workers
and back."""
from __future__ import annotations

import os
import sys
import tempfile


def session_work() -> None:
    import pandas as pd
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.appName("airflow-paimon-warm-up")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "rows.parquet")
        pd.DataFrame({"id": range(100), "dt": ["2026-01-01"] * 100, "v": [1.5] * 100}).to_parquet(path)
        source = spark.read.parquet(path).selectExpr(
            "id", "CASE WHEN try_cast(dt AS DATE) IS NULL THEN raise_error('dt') ELSE try_cast(dt AS DATE) END AS dt",
            "try_cast(v AS DOUBLE) AS v", "monotonically_increasing_id() AS _order")
        source = source.join(spark.createDataFrame(pd.DataFrame({"id": [1]}), "id long"), on=["id"], how="left_anti")
        source.toArrow()
        same = source.schema
        (source.repartition(2, "id").mapInArrow(lambda batches: batches, same)
         .repartition(2, "dt").sortWithinPartitions("dt").mapInArrow(lambda batches: batches, same).collect())
        source.groupBy("dt").count().collect()
    spark.stop()


if __name__ == "__main__":
    if sys.argv[-1] == "session":
        session_work()
