"""When an assign-and-write runs in the driver rather than in Spark tasks: a small source of a cross-partition
table under spark-submit. Its Spark tasks would cost more than its work: the Python workers' daemon start
(importing pyarrow, pandas, pypaimon and the engine: 1-3 s of the example's 1,000-row spark-submit, more under
load), each worker unpickling the job's functions, and a shuffle stage, for 0.2-0.3 s of assigning and writing
(tests/benchmarks/README.md, "Where a small assign-and-write's seconds go")."""
from __future__ import annotations

from airflow_paimon.engine.assign.shapes import CROSS_PARTITION, TableShape
from airflow_paimon.spark import pyspark_compat
from airflow_paimon.spark.pipelines import cross_partition

# Spark conf: the largest source (Spark's size estimate of the validated source, bytes) written in the driver;
# 0 turns it off. The driver holds such a source in memory (at most write-buffer-size of it, then it spills).
MAX_BYTES_CONF, MAX_BYTES_DEFAULT = "spark.airflow_paimon.driverWriteMaxBytes", 8 * 2**20
WRITERS = {CROSS_PARTITION.name: cross_partition.write_in_driver}


def fits(source, shape: TableShape) -> bool:
    """Whether ``source`` (the validated source DataFrame) is written in the driver: a shape that can be, a
    driver that is this process (not a Spark Connect client: its driver is the task process), and Spark's
    size estimate of the source within MAX_BYTES_CONF (a file source: its files' size; unknown: too big)."""
    if shape.name not in WRITERS or not pyspark_compat.has_jvm_plan(source):
        return False
    limit = int(source.sparkSession.conf.get(MAX_BYTES_CONF, str(MAX_BYTES_DEFAULT)))
    return limit > 0 and pyspark_compat.plan_size_bytes(source) <= limit


def write(source, ctx, shape: TableShape) -> list[dict]:
    return WRITERS[shape.name](source, ctx)
