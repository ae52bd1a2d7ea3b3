"""Spark job: expire snapshots (driver-only). Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.engine.specs import ExpireSpec
from airflow_paimon.spark.job import run
from airflow_paimon.spark.maintenance import run_expire_snapshots

if __name__ == "__main__":
    run(run_expire_snapshots, ExpireSpec)
