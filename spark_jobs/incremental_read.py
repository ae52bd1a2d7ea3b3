"""Spark job: incremental_read. Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.engine.specs import IncrementalReadSpec
from airflow_paimon.spark.incremental import run_incremental_read
from airflow_paimon.spark.job import run, spark_session

if __name__ == "__main__":
    run(lambda spec: run_incremental_read(spark_session(spec, "paimon-incremental-read"), spec), IncrementalReadSpec)
