"""One attempt of a Spark job as its own process, the way spark_jobs/<job>.py runs it under spark-submit:
read the spec (a JSON file), start a local[1] Spark session with the jobs' submit conf, call the job
function, write its result as JSON. The fault tests run it with AIRFLOW_PAIMON_CRASH_AT set and
SIGKILL lands at that point (airflow_paimon/engine/faults.py).

    python tests/faults/run_job.py <bootstrap|assign_and_write|commit|compact> SPEC_FILE RESULT_FILE
"""
from __future__ import annotations

import json
import os
import sys

from airflow_paimon.engine.faults import CRASH_AT
from airflow_paimon.engine.specs import AssignWriteSpec, BootstrapSpec, CommitSpec, CompactSpec, JobSpec, Wire

SPECS = {"bootstrap": BootstrapSpec, "assign_and_write": AssignWriteSpec, "commit": CommitSpec,
         "compact": CompactSpec}


def spark_session():
    from pyspark.sql import SparkSession

    from airflow_paimon.spark.job import submit_conf

    builder = SparkSession.builder.master("local[1]").appName("airflow-paimon-fault")
    for key, value in {**submit_conf(sys.executable), "spark.sql.shuffle.partitions": "2",
                       # the crash point reaches the Python workers as it would on executors of a cluster
                       f"spark.executorEnv.{CRASH_AT}": os.environ.get(CRASH_AT, "")}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run_in(spark, job: str, spec: JobSpec) -> Wire:
    """``job`` on ``spec`` with ``spark`` (the commit is driver-only, as in spark_jobs/commit.py)."""
    from airflow_paimon.engine.commit.run import run_commit
    from airflow_paimon.spark.assign_write import run_assign_and_write
    from airflow_paimon.spark.bootstrap import run_bootstrap
    from airflow_paimon.spark.compact import run_compact

    if job == "commit":
        return run_commit(spec)
    return {"bootstrap": run_bootstrap, "assign_and_write": run_assign_and_write, "compact": run_compact}[job](
        spark, spec)


def main(job: str, spec_file: str, result_file: str) -> None:
    with open(spec_file) as f:
        spec = SPECS[job].from_dict(json.load(f))
    result = run_in(None if job == "commit" else spark_session(), job, spec)
    with open(result_file, "w") as f:
        json.dump(result.to_dict(), f)


if __name__ == "__main__":
    main(*sys.argv[1:])
