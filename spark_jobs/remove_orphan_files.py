"""Spark job: remove orphan files (driver-only). Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.engine.specs import OrphansSpec
from airflow_paimon.spark.job import run
from airflow_paimon.spark.maintenance import run_remove_orphan_files

if __name__ == "__main__":
    run(run_remove_orphan_files, OrphansSpec)
