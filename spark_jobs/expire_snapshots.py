"""Spark job: expire snapshots (driver-only). Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.spark.job import run
from airflow_paimon.spark.jobs import JOBS

if __name__ == "__main__":
    run(*JOBS["expire_snapshots"])
