"""Spark job: commit (driver-only). Arguments: --spec JSON --result-uri URI."""
import sys

from airflow_paimon.spark.commit import run_commit
from airflow_paimon.spark.job import parse_args, run

if __name__ == "__main__":
    # the commit also drops this DAG's old result files, next to its own
    result_uri = parse_args(sys.argv[1:])[1]
    run(lambda spec: run_commit({**spec, "result_uri": result_uri}))
