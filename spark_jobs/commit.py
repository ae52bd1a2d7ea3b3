"""Spark job: commit (driver-only). Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.spark.commit import run_commit
from airflow_paimon.spark.job import run

if __name__ == "__main__":
    run(run_commit)
