"""Spark job: assign-and-write. Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.engine.specs import AssignWriteSpec
from airflow_paimon.spark.assign_write import run_assign_and_write
from airflow_paimon.spark.job import run, spark_session

if __name__ == "__main__":
    run(lambda spec: run_assign_and_write(spark_session(spec, "paimon-assign-and-write"), spec), AssignWriteSpec)
