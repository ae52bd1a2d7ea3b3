"""Spark job: commit (driver-only). Arguments: --spec-file PATH (deleted once read) --result-uri URI."""
import sys
from dataclasses import replace

from airflow_paimon.engine.commit.run import run_commit
from airflow_paimon.engine.specs import CommitSpec
from airflow_paimon.spark.job import result_uri_of, run

if __name__ == "__main__":
    # the commit also drops this DAG's old result files, next to its own
    result_uri = result_uri_of(sys.argv[1:])
    run(lambda spec: run_commit(replace(spec, result_uri=result_uri)), CommitSpec)
