"""One attempt of a Spark job as its own process, the way spark_jobs/<job>.py runs it under spark-submit:
read the spec (a JSON file) as the job's spec type (spark/job_registry.py), start a local[1] Spark session with the
jobs' submit conf, call the job's Spark function, write its result as JSON. The fault tests run it with
AIRFLOW_PAIMON_CRASH_AT set and SIGKILL lands at that point (airflow_paimon/engine/faults.py).

    python tests/faults/run_job.py <bootstrap_index|assign_and_write|commit|compact> SPEC_FILE RESULT_FILE
"""
from __future__ import annotations

import json
import os
import sys

from airflow_paimon.engine.faults import CRASH_AT
from airflow_paimon.spark.job_registry import JOBS
from local_runner import in_spark


def spark_session():
    from pyspark.sql import SparkSession

    from airflow_paimon.spark.submit import submit_conf

    builder = SparkSession.builder.master("local[1]").appName("airflow-paimon-fault")
    for key, value in {**submit_conf(sys.executable), "spark.sql.shuffle.partitions": "2",
                       "spark.airflow_paimon.driverWriteMaxBytes": "0",  # the crash points in Spark tasks
                       # the crash point reaches the Python workers as it would on executors of a cluster
                       f"spark.executorEnv.{CRASH_AT}": os.environ.get(CRASH_AT, "")}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(job: str, spec_file: str, result_file: str) -> None:
    with open(spec_file) as f:
        spec = JOBS[job].spec.from_dict(json.load(f))
    result = in_spark(None if JOBS[job].driver_only else spark_session())(job, spec)
    with open(result_file, "w") as f:
        json.dump(result.to_dict(), f)


if __name__ == "__main__":
    main(*sys.argv[1:])
