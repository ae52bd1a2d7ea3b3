"""Spark job: commit (driver-only)."""
from __future__ import annotations

from dataclasses import replace

from airflow_paimon.engine.runs.commit import run_commit as commit
from airflow_paimon.engine.jobs.specs import CommitResult, CommitSpec
from airflow_paimon.spark.job_frame import current_run


def run_commit(spec: CommitSpec) -> CommitResult:
    # the commit also drops this DAG's old result files, next to its own
    return commit(replace(spec, result_uri=current_run().result_uri))
