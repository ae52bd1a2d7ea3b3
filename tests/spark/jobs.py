"""The jobs' Spark functions on the test's session, with the specs the operators build (tests/local_runner.py)."""
from __future__ import annotations

from local_runner import Pipeline, in_spark


def pipeline_on(spark, warehouse: str, table: str, table_spec: dict | None = None, shards: int = 2) -> Pipeline:
    """``table``'s DAG runs on ``spark``: bootstrap(), assign_and_write(boot, source, run_id), commit(written),
    upsert(frame, run_id, tmp_path)."""
    return Pipeline({"warehouse": warehouse}, table, run_job=in_spark(spark), table_spec=table_spec, shards=shards,
                    dag_id="tests")
