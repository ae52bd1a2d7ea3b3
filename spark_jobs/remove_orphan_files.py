"""Spark job: remove orphan files (driver-only). Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.spark.job_runner import run_job

if __name__ == "__main__":
    run_job("remove_orphan_files")
