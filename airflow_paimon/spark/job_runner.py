"""Runs a job of spark/job_registry.py: ``spark_jobs/<name>.py`` runs one under spark-submit (its own driver
process, ``run_job``); an operator on a Spark Connect connection runs one in its task process as a Connect client
(``job_function``). Either way through the frame of airflow_paimon/spark/job_frame.py, which hands
``spark_session()`` the Spark to use."""
from __future__ import annotations

import importlib
import threading
from typing import Callable

from airflow_paimon.engine.jobs.specs import JobSpec, Wire
from airflow_paimon.spark.job_frame import run, spark_session
from airflow_paimon.spark.job_registry import JOBS, Job


def on_session(job: Job, spec) -> Wire:
    """The job's function on its session. The job's module (the engine, pypaimon, pandas: ≈0.5 s of imports) is
    imported in a thread while the session starts, which on spark-submit is mostly waiting for the JVM's
    SparkContext: ≈0.2 s off an assign-and-write (tests/benchmarks/README.md)."""
    importlib.import_module("pyspark.sql")  # first, here: the two threads never import it at once

    importer = threading.Thread(target=job.load, daemon=True)
    importer.start()
    try:
        spark = spark_session(spec, f"paimon-{job.name.replace('_', '-')}")
    finally:
        importer.join()
    # a failed import raises here, in the job's thread
    return job.load()(spark, spec)


def job_function(job: Job) -> Callable[[JobSpec], Wire]:
    """The function that runs ``job`` on a spec of its type: on the driver alone, or on the job's session."""
    if job.driver_only:
        return job.load()
    return lambda spec: on_session(job, spec)


def run_job(name: str, argv: list[str] | None = None) -> None:
    """The main of ``spark_jobs/<name>.py`` under spark-submit: the job ``name`` of spark/job_registry.py."""
    job = JOBS[name]
    run(job_function(job), job.spec, argv)
