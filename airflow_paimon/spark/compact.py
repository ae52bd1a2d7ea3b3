"""compact on Spark: the driver plans, one Spark task per bucket rewrites it, the driver commits one COMPACT
snapshot."""
from __future__ import annotations

import logging

import pyarrow as pa

from airflow_paimon.engine.compact.run import compact_task, compaction_identity, run_compaction
from airflow_paimon.engine.context import cached_table
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.specs import CompactResult, CompactSpec
from airflow_paimon.engine.table import get_table

log = logging.getLogger(__name__)


def run_compact(spark, spec: CompactSpec) -> CompactResult:
    identifier = spec.table
    table = get_table(spec.catalog_options, identifier)
    identity = compaction_identity(spec.dag_id, spec.run_id, identifier)
    schema_id = table.table_schema.id
    result = run_compaction(table, identity, spec.snapshot_id, full=spec.full, scope=spec.scope,
                            partition_filter=spec.partition_filter,
                            execute=lambda work: _execute(spark, spec, work, schema_id))
    log.debug("compaction of %s: %s", identifier, result)
    return CompactResult.from_dict({**result, "table": identifier})


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
