"""The Spark function of every job, under the job's name in engine/jobs.py (Job.spark_function).
``spark_jobs/<name>.py`` runs one under spark-submit (its own driver process); an operator on a Spark Connect
connection runs one in its task process as a Connect client. Either way through the frame of airflow_paimon/spark/job.py, which hands
``spark_session()`` the Spark to use. Imports are inside the functions: a job loads only its own modules."""
from __future__ import annotations

import importlib
import threading
from dataclasses import replace

from airflow_paimon.engine.specs import (AssignWriteSpec, BootstrapSpec, CommitSpec, CompactSpec, ExpireSpec,
                                         IncrementalReadSpec, OrphansSpec, Wire)
from airflow_paimon.spark.job import current_run, spark_session


def on_session(module: str, function: str, spec, app_name: str) -> Wire:
    """``module.function(spark, spec)`` on the job's session. The module (the engine, pypaimon, pandas: ≈0.5 s of
    imports) is imported in a thread while the session starts, which on spark-submit is mostly waiting for the
    JVM's SparkContext: ≈0.2 s off an assign-and-write (tests/benchmarks/README.md)."""
    importlib.import_module("pyspark.sql")  # first, here: the two threads never import it at once

    importer = threading.Thread(target=importlib.import_module, args=(module,), daemon=True)
    importer.start()
    try:
        spark = spark_session(spec, app_name)
    finally:
        importer.join()
    # a failed import raises here, in the job's thread
    return getattr(importlib.import_module(module), function)(spark, spec)


def bootstrap_index(spec: BootstrapSpec) -> Wire:
    return on_session("airflow_paimon.spark.bootstrap", "run_bootstrap", spec, "paimon-bootstrap-index")


def assign_and_write(spec: AssignWriteSpec) -> Wire:
    return on_session("airflow_paimon.spark.assign_write", "run_assign_and_write", spec, "paimon-assign-and-write")


def commit(spec: CommitSpec) -> Wire:
    from airflow_paimon.engine.runs.commit import run_commit
    # the commit also drops this DAG's old result files, next to its own
    return run_commit(replace(spec, result_uri=current_run().result_uri))


def compact(spec: CompactSpec) -> Wire:
    return on_session("airflow_paimon.spark.compact", "run_compact", spec, "paimon-compact")


def incremental_read(spec: IncrementalReadSpec) -> Wire:
    return on_session("airflow_paimon.spark.incremental", "run_incremental_read", spec, "paimon-incremental-read")


def expire_snapshots(spec: ExpireSpec) -> Wire:
    from airflow_paimon.spark.maintenance import run_expire_snapshots
    return run_expire_snapshots(spec)


def remove_orphan_files(spec: OrphansSpec) -> Wire:
    from airflow_paimon.spark.maintenance import run_remove_orphan_files
    return run_remove_orphan_files(spec)

