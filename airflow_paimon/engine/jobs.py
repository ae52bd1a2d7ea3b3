"""Every job once: its name, the spec it reads and the result it writes (engine/specs.py), how that result
reads in the task log (engine/progress.py), and the function that runs it on Spark. An operator names its job
(``job = "compact"``); the entry script ``spark_jobs/<name>.py``, both submission backends
(operators/backends.py) and the fault tests' runner find everything else here.

The Spark function is a dotted name, imported when the job runs: the engine imports no Spark, and a DAG file
that imports an operator imports only this table.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from airflow_paimon.engine import progress
from airflow_paimon.engine.specs import (AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitResult, CommitSpec, CompactResult, CompactSpec, ExpireResult,
                                         ExpireSpec, IncrementalReadResult, IncrementalReadSpec, JobSpec,
                                         OrphansResult, OrphansSpec, Wire)

SPARK_FUNCTIONS = "airflow_paimon.spark.jobs"  # where every job's Spark function is, under the job's name


@dataclass(frozen=True)
class Job:
    name: str  # the operator's ``job``, the entry script spark_jobs/<name>.py
    spec: type[JobSpec]
    result: type[Wire]
    describe: Callable[[Any], str]  # the result (of type ``result``) as the counts of the progress line
    driver_only: bool = False  # metadata work on the driver alone: no Spark session

    @property
    def script(self) -> str:
        """The entry script's file name, in spark_jobs/ (the wheel: airflow_paimon/_spark_jobs/)."""
        return f"{self.name}.py"

    def spark_function(self) -> Callable[[JobSpec], Wire]:
        """The function that runs the job on a spec of type ``spec`` (imports Spark glue: only where it runs)."""
        return getattr(importlib.import_module(SPARK_FUNCTIONS), self.name)

    def describe_result(self, result: dict) -> str:
        return self.describe(self.result.from_dict(result))


JOBS: dict[str, Job] = {job.name: job for job in (
    Job("bootstrap_index", BootstrapSpec, BootstrapResult, progress.describe_bootstrap),
    Job("assign_and_write", AssignWriteSpec, AssignWriteResult, progress.describe_assign_write),
    Job("commit", CommitSpec, CommitResult, progress.describe_commit, driver_only=True),
    Job("compact", CompactSpec, CompactResult, progress.describe_compact),
    Job("incremental_read", IncrementalReadSpec, IncrementalReadResult, progress.describe_incremental_read),
    Job("expire_snapshots", ExpireSpec, ExpireResult, progress.describe_expire, driver_only=True),
    Job("remove_orphan_files", OrphansSpec, OrphansResult, progress.describe_orphans, driver_only=True),
)}


def progress_line(job: str, result: dict, seconds: float) -> str:
    """``<job> <table>: <what it did>, <seconds> s`` for the result dict of ``job`` (a job not in JOBS — another
    package's operator — gets its result's fields)."""
    if job in JOBS:
        what = JOBS[job].describe_result(result)
    else:
        what = ", ".join(f"{k} {v}" for k, v in result.items() if k != "table")
    return f"{job.replace('_', '-')} {result.get('table')}: {what}, {seconds:.1f} s"
