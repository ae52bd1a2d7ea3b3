"""Spark job: bootstrap-index. Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
from airflow_paimon.engine.specs import BootstrapSpec
from airflow_paimon.spark.bootstrap import run_bootstrap
from airflow_paimon.spark.job import run, spark_session

if __name__ == "__main__":
    run(lambda spec: run_bootstrap(spark_session(spec, "paimon-bootstrap-index"), spec), BootstrapSpec)
