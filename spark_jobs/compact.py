"""Spark job: compact. Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.engine.specs import CompactSpec
from airflow_paimon.spark.compact import run_compact
from airflow_paimon.spark.job import run, spark_session

if __name__ == "__main__":
    run(lambda spec: run_compact(spark_session(spec, "paimon-compact"), spec), CompactSpec)
