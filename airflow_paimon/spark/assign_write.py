"""assign-and-write on Spark: the engine's orchestration (engine/runs/assign_and_write.py) with a Spark source and the
bucket mode's Spark pipeline (spark/pipelines/: cross-partition, dynamic, fixed, append)."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from airflow_paimon.engine.specs import AssignWriteResult, AssignWriteSpec
from airflow_paimon.engine.runs.assign_and_write import assign_and_write
from airflow_paimon.spark.pipelines import PIPELINES, in_driver
from airflow_paimon.spark.routing import without_adaptive_execution
from airflow_paimon.spark.source import arrow_schema, read_source, validate_and_cast, validation_errors

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def run_assign_and_write(spark, spec: AssignWriteSpec) -> AssignWriteResult:
    identifier = spec.table
    frame = functools.cache(lambda: read_source(spark, spec.source, identifier))

    def read(table: FileStoreTable, row_kind_column, absent):
        with validation_errors(identifier, spec.source):
            return validate_and_cast(frame(), table, identifier, row_kind_column, absent)

    def write(source, ctx, shape):
        with validation_errors(identifier, spec.source), without_adaptive_execution(spark):
            if in_driver.fits(source, shape):
                return in_driver.write(source, ctx, shape)
            return PIPELINES[shape.name](source, ctx).collect()

    def source_schema():
        with validation_errors(identifier, spec.source):
            return arrow_schema(frame())

    def leave_out(source, keys):
        return without_keys(spark, source, keys)

    return assign_and_write(spec, read=read, write=write, source_schema=source_schema, leave_out=leave_out)


def without_keys(spark, source, keys):
    """``source`` (a DataFrame) without the rows whose primary key is a row of ``keys`` (an Arrow table of the key
    columns): a left anti join (Spark broadcasts the keys when they are few)."""
    names = keys.column_names
    typed = source.select(*names).schema  # the source's key types, so the join compares like with like
    return source.join(spark.createDataFrame(keys.to_pandas(), typed), on=names, how="left_anti")
