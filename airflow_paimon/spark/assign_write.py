"""assign-and-write on Spark: the engine's orchestration (engine/runs/assign_and_write.py) with a Spark source and the
bucket mode's Spark pipeline (spark/pipelines/: cross-partition, dynamic, fixed, append)."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from airflow_paimon.engine.commit.ordering import SNAPSHOT, Superseding
from airflow_paimon.engine.jobs.specs import AssignWriteResult, AssignWriteSpec
from airflow_paimon.engine.runs.assign_and_write import assign_and_write
from airflow_paimon.spark.bootstrap import SparkIndexTasks
from airflow_paimon.spark.pipelines import PIPELINES, in_driver
from airflow_paimon.spark.routing import without_adaptive_execution
from airflow_paimon.spark.source import arrow_schema, read_source, validate_and_cast, validation_errors

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def run_assign_and_write(spark, spec: AssignWriteSpec) -> AssignWriteResult:
    return assign_and_write(spec, SparkWriteTasks(spark, spec))


class SparkWriteTasks:
    """engine/runs/assign_and_write.py WriteTasks on Spark: the run's source a DataFrame (read once, when first
    asked for), written by the bucket mode's Spark pipeline, or in the driver when it is small."""

    def __init__(self, spark, spec: AssignWriteSpec):
        self.spark, self.identifier, self.source = spark, spec.table, spec.source
        self.index_tasks = SparkIndexTasks(spark)

    @functools.cached_property
    def frame(self):
        return read_source(self.spark, self.source, self.identifier)

    def source_schema(self):
        with validation_errors(self.identifier, self.source):
            return arrow_schema(self.frame)

    def read(self, table: FileStoreTable, row_kind_column, absent):
        with validation_errors(self.identifier, self.source):
            return validate_and_cast(self.frame, table, self.identifier, row_kind_column, absent)

    def leave_out(self, source, found: Superseding):
        return without_superseded(self.spark, source, found)

    def write(self, source, ctx, shape):
        with validation_errors(self.identifier, self.source), without_adaptive_execution(self.spark):
            if in_driver.fits(source, shape):
                return in_driver.write(source, ctx, shape)
            return PIPELINES[shape.name](source, ctx).collect()


def without_superseded(spark, source, found: Superseding):
    """``source`` (a DataFrame) without the rows ``found`` supersedes (engine/commit/ordering.py: keys runs as of a
    later instant wrote, partitions they overwrote), by left anti joins (Spark broadcasts the few rows of ``found``),
    and {snapshot id: distinct keys left out for it}, as ordering.left_out_arrow counts them."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    keys = found.primary_keys
    if found.whole_table is not None:
        return source.limit(0), {found.whole_table: source.select(*keys).distinct().count()}
    tagged, kept, hits = source.select(*dict.fromkeys(keys + found.partition_keys())), source, []
    for n, table in enumerate((found.keys, found.partitions)):  # a key a later run wrote first, then a partition
        if table is None:
            continue
        names = [c for c in table.column_names if c != SNAPSHOT]
        # the source's types, so the joins compare like with like
        typed = StructType([*source.select(*names).schema.fields, StructField(SNAPSHOT, LongType())])
        later = spark.createDataFrame(table.to_pandas(), typed).withColumnRenamed(SNAPSHOT, f"_hit{n}")
        tagged = tagged.join(F.broadcast(later), on=names, how="left")
        kept = kept.join(F.broadcast(later.drop(f"_hit{n}")), on=names, how="left_anti")
        hits.append(F.col(f"_hit{n}"))
    hit = tagged.select(*keys, F.coalesce(*hits).alias(SNAPSHOT)).where(F.col(SNAPSHOT).isNotNull())
    counts = hit.groupBy(*keys).agg(F.max(SNAPSHOT).alias(SNAPSHOT)).groupBy(SNAPSHOT).count().collect()
    return kept.select(*source.columns), {row[SNAPSHOT]: row["count"] for row in counts}  # a join puts keys first
