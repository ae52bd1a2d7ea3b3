"""bootstrap-index on Spark: the engine's orchestration (engine/runs/bootstrap_index.py) with Spark running its tasks.
A rebuild is one stage: task p builds part p. A catch-up reads the added files in parallel, shuffles the
change rows to their shard, and task s applies shard s. The driver publishes the manifest last.
The task functions themselves are the engine's (engine/index/bootstrap.py)."""
from __future__ import annotations

import json
from functools import cached_property

import pyarrow as pa

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.index.bootstrap import CHANGE_ROWS
from airflow_paimon.engine.index.layout import ShardMeta, shard_meta_from_dict, shard_meta_json
from airflow_paimon.engine.runs.bootstrap_index import bootstrap_index
from airflow_paimon.engine.jobs.specs import BootstrapResult, BootstrapSpec
from airflow_paimon.spark.connect import default_parallelism
from airflow_paimon.spark.routing import ROUTE, per_group, route_column, routes, without_adaptive_execution

SHARD_RESULT = "shard int, meta string"


def run_bootstrap(spark, spec: BootstrapSpec) -> BootstrapResult:
    result = bootstrap_index(spec, SparkIndexTasks(spark))
    assert result is not None  # None only when deciding without tasks
    return result


def _metas(metas: list[ShardMeta]) -> pa.Table:
    return pa.table({"shard": pa.array([m.shard for m in metas], pa.int32()),
                     "meta": [shard_meta_json(m) for m in metas]})


def _collect(df) -> list[ShardMeta]:
    return [shard_meta_from_dict(json.loads(r["meta"])) for r in df.collect()]


class SparkIndexTasks:
    def __init__(self, spark):
        self.spark = spark

    @cached_property
    def parallelism(self) -> int:
        return default_parallelism(self.spark)

    def rebuild(self, build, parts: int) -> list[ShardMeta]:
        store = storage.options()

        def run(batches):
            storage.configure(store)  # this worker reads data files and writes shards with the connection's credentials
            for batch in batches:
                for part in batch.column(0).to_pylist():
                    yield from _metas(build(part)).to_batches()

        return _collect(self.spark.range(parts, numPartitions=parts).mapInArrow(run, SHARD_RESULT))

    def catch_up(self, read_file, files: int, apply, shards: int) -> list[ShardMeta]:
        store, route = storage.options(), routes(shards)

        def read(batches):
            storage.configure(store)
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    changes = read_file(i)
                    shard_ids = changes.column("shard").to_numpy()
                    yield from changes.append_column(ROUTE, route_column(shard_ids, route)).to_batches()

        def apply_one(rows: pa.Table) -> pa.Table:
            storage.configure(store)
            return _metas([apply(rows.column("shard")[0].as_py(), rows.drop_columns([ROUTE]))])

        tasks = max(1, min(files, self.parallelism * 2))
        schema = f"{_spark_schema(CHANGE_ROWS)}, {ROUTE} int"
        with without_adaptive_execution(self.spark):
            rows = self.spark.range(files, numPartitions=tasks).mapInArrow(read, schema).repartition(shards, ROUTE)
            return _collect(rows.mapInArrow(per_group(apply_one, ["shard"]), SHARD_RESULT))


def _spark_schema(schema: pa.Schema) -> str:
    names = {pa.int32(): "int", pa.binary(): "binary", pa.string(): "string", pa.int64(): "long",
             pa.bool_(): "boolean"}
    return ", ".join(f"{f.name} {names[f.type]}" for f in schema)
