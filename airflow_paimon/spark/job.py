"""Common frame of every Spark job: read the job spec from argv, run, hand the result dict back in a file."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Callable

from airflow_paimon.engine import storage

log = logging.getLogger("airflow_paimon.job")


def parse_args(argv: list[str] | None = None) -> tuple[dict, str]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True, help="the job spec as JSON")
    parser.add_argument("--result-uri", required=True, help="where to write the result JSON")
    args = parser.parse_args(argv)
    return json.loads(args.spec), args.result_uri


def run(job: Callable[[dict], dict], argv: list[str] | None = None) -> None:
    """Run ``job(spec)``; write its dict to the result URI; exit non-zero with the error on failure."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spec, result_uri = parse_args(argv)
    storage.configure(spec.get("catalog_options", {}))  # the result file even when the job fails early
    try:
        result = job(spec)
    except Exception as e:
        log.exception("job failed")
        storage.write_bytes_atomic(result_uri, json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
        sys.exit(1)
    storage.write_bytes_atomic(result_uri, json.dumps(result).encode())
    log.info("result: %s", json.dumps(result))


# The driver JVM of a short job: C1 only (no C2 compiler threads competing for the cores) and the serial GC.
# Cuts 2-3 s off every spark-submit on 2 cores (README, Benchmark); replace it via spark_conf for big drivers.
SHORT_JOB_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def submit_conf(python: str | None, driver_python: str | None = None) -> dict[str, str]:
    """The Spark conf every job is submitted with (the operator puts the user's ``spark_conf`` on top); the
    benchmarks submit with it too. ``python``: the interpreter of the Python workers (None: Spark's default),
    ``driver_python``: the driver's (default ``python``); see airflow_paimon/operators/submit.py."""
    pythons = {"spark.pyspark.python": python, "spark.pyspark.driver.python": driver_python or python}
    return {**{k: v for k, v in pythons.items() if v},
            # No Spark UI: these jobs are short, the Airflow UI shows their logs and result.
            "spark.ui.enabled": "false",
            # Python workers fork from a daemon that imported what they need once (airflow_paimon/spark/daemon.py)
            "spark.python.daemon.module": "airflow_paimon.spark.daemon",
            "spark.driver.extraJavaOptions": SHORT_JOB_JAVA_OPTIONS}


def spark_session(spec: dict, app_name: str):
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName(app_name)
    builder = builder.config("spark.sql.shuffle.partitions", str(spec.get("shuffle_partitions", 8)))
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
    return builder.getOrCreate()
