"""The Spark function of every job, under the job's name in engine/jobs.py (Job.spark_function).
``spark_jobs/<name>.py`` runs one under spark-submit (its own driver process); an operator on a Spark Connect
connection runs one in its task process as a Connect client. Either way through the frame of airflow_paimon/spark/job.py, which hands
``spark_session()`` the Spark to use. Imports are inside the functions: a job loads only its own modules."""
from __future__ import annotations

from dataclasses import replace

from airflow_paimon.engine.specs import (AssignWriteSpec, BootstrapSpec, CommitSpec, CompactSpec, ExpireSpec,
                                         IncrementalReadSpec, OrphansSpec, Wire)
from airflow_paimon.spark.job import current_run, spark_session


def bootstrap_index(spec: BootstrapSpec) -> Wire:
    from airflow_paimon.spark.bootstrap import run_bootstrap
    return run_bootstrap(spark_session(spec, "paimon-bootstrap-index"), spec)


def assign_and_write(spec: AssignWriteSpec) -> Wire:
    from airflow_paimon.spark.assign_write import run_assign_and_write
    return run_assign_and_write(spark_session(spec, "paimon-assign-and-write"), spec)


def commit(spec: CommitSpec) -> Wire:
    from airflow_paimon.engine.commit.run import run_commit
    # the commit also drops this DAG's old result files, next to its own
    return run_commit(replace(spec, result_uri=current_run().result_uri))


def compact(spec: CompactSpec) -> Wire:
    from airflow_paimon.spark.compact import run_compact
    return run_compact(spark_session(spec, "paimon-compact"), spec)


def incremental_read(spec: IncrementalReadSpec) -> Wire:
    from airflow_paimon.spark.incremental import run_incremental_read
    return run_incremental_read(spark_session(spec, "paimon-incremental-read"), spec)


def expire_snapshots(spec: ExpireSpec) -> Wire:
    from airflow_paimon.spark.maintenance import run_expire_snapshots
    return run_expire_snapshots(spec)


def remove_orphan_files(spec: OrphansSpec) -> Wire:
    from airflow_paimon.spark.maintenance import run_remove_orphan_files
    return run_remove_orphan_files(spec)

