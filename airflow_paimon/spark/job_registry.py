"""Every job once: its name, the spec it reads and the result it writes (engine/jobs/specs.py), how that result
reads in the task log (engine/jobs/progress.py), and the function that runs it on Spark. An operator names its job
(``job = "compact"``); the entry script ``spark_jobs/<name>.py``, both submission backends
(spark/backends.py, the Airflow side's entry into spark/) and the fault tests' runner find everything else here.

Each record loads its job's function when the job runs (``load``, which imports the job's module then): a DAG
file that imports an operator imports only this table, no Spark and no engine beyond the specs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from airflow_paimon.engine.jobs import progress
from airflow_paimon.engine.jobs.specs import (AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitResult, CommitSpec, CompactResult, CompactSpec, ExpireResult,
                                         ExpireSpec, IncrementalReadResult, IncrementalReadSpec, JobSpec,
                                         OrphansResult, OrphansSpec, Wire)


@dataclass(frozen=True)
class Job:
    name: str  # the operator's ``job``, the entry script spark_jobs/<name>.py
    spec: type[JobSpec]
    result: type[Wire]
    describe: Callable[[Any], str]  # the result (of type ``result``) as the counts of the progress line
    # imports the job's module, returns its function: (spark session, spec) -> result; driver-only: spec -> result
    load: Callable[[], Callable[..., Wire]]
    driver_only: bool = False  # metadata work on the driver alone: no Spark session

    @property
    def script(self) -> str:
        """The entry script's file name, in spark_jobs/ (the wheel: airflow_paimon/_spark_jobs/)."""
        return f"{self.name}.py"

    def describe_result(self, result: dict) -> str:
        return self.describe(self.result.from_dict(result))


# The jobs' functions, imported only when a job runs (spark/job_runner.py)
def _bootstrap_index():
    from airflow_paimon.spark.bootstrap import run_bootstrap
    return run_bootstrap


def _assign_and_write():
    from airflow_paimon.spark.assign_write import run_assign_and_write
    return run_assign_and_write


def _commit():
    from airflow_paimon.spark.commit import run_commit
    return run_commit


def _compact():
    from airflow_paimon.spark.compact import run_compact
    return run_compact


def _incremental_read():
    from airflow_paimon.spark.incremental import run_incremental_read
    return run_incremental_read


def _expire_snapshots():
    from airflow_paimon.spark.expire_snapshots import run_expire_snapshots
    return run_expire_snapshots


def _remove_orphan_files():
    from airflow_paimon.spark.remove_orphan_files import run_remove_orphan_files
    return run_remove_orphan_files


JOBS: dict[str, Job] = {job.name: job for job in (
    Job("bootstrap_index", BootstrapSpec, BootstrapResult, progress.describe_bootstrap, _bootstrap_index),
    Job("assign_and_write", AssignWriteSpec, AssignWriteResult, progress.describe_assign_write, _assign_and_write),
    Job("commit", CommitSpec, CommitResult, progress.describe_commit, _commit, driver_only=True),
    Job("compact", CompactSpec, CompactResult, progress.describe_compact, _compact),
    Job("incremental_read", IncrementalReadSpec, IncrementalReadResult, progress.describe_incremental_read,
        _incremental_read),
    Job("expire_snapshots", ExpireSpec, ExpireResult, progress.describe_expire, _expire_snapshots,
        driver_only=True),
    Job("remove_orphan_files", OrphansSpec, OrphansResult, progress.describe_orphans, _remove_orphan_files,
        driver_only=True),
)}


def progress_line(job: str, result: dict, seconds: float) -> str:
    """``<job> <table>: <what it did>, <seconds> s`` for the result dict of ``job`` (a job not in JOBS — another
    package's operator — gets its result's fields)."""
    if job in JOBS:
        what = JOBS[job].describe_result(result)
    else:
        what = ", ".join(f"{k} {v}" for k, v in result.items() if k != "table")
    return f"{job.replace('_', '-')} {result.get('table')}: {what}, {seconds:.1f} s"
