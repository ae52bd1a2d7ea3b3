"""compact on Spark: the driver plans, one Spark task per bucket rewrites it, the driver commits one COMPACT
snapshot."""
from __future__ import annotations

import logging

import pyarrow as pa

from airflow_paimon.engine.runs.compact import compact, compact_task
from airflow_paimon.engine.write.context import cached_table
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.jobs.specs import CompactResult, CompactSpec

log = logging.getLogger(__name__)


def run_compact(spark, spec: CompactSpec) -> CompactResult:
    result = compact(spec, execute=lambda table, work: _execute(spark, spec, work, table.table_schema.id))
    log.debug("compaction of %s: %s", spec.table, result)
    assert result is not None  # None only when deciding without execute
    return result


def _execute(spark, spec: CompactSpec, work: list, schema_id: int) -> list[bytes]:
    """Rewrite every planned bucket in its own Spark task; returns the encoded CommitMessages."""
    import json

    options_json, identifier = json.dumps(spec.catalog_options, sort_keys=True), spec.table

    def rewrite(batches):
        table = cached_table(options_json, identifier, schema_id)  # as planned: a reused worker's may be older
        for batch in batches:
            for i in batch.column(0).to_pylist():
                message = compact_task(table, work[i])
                crash_point("compact.bucket_rewritten")
                yield pa.RecordBatch.from_arrays([pa.array([message], pa.binary())], names=["message"])

    tasks = spark.range(len(work), numPartitions=len(work))
    return [bytes(r["message"]) for r in tasks.mapInArrow(rewrite, "message binary").collect()]
