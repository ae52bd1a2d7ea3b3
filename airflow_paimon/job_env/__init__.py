"""Where the job side runs. Airflow's environment holds the thin provider; everything that imports pypaimon,
rocksdict or pyroaring runs in a job environment: a venv with this provider and its ``jobs`` extra
(``python -m airflow_paimon.job_env create PATH``), or this very interpreter when it can import them (one
environment holding both sides, as this repo's own).

How a task finds it, first found wins:
- the Spark connection's extra ``job_python`` (an interpreter path) / ``job_archive`` (a packed job environment
  for the executors: ``python -m airflow_paimon.job_env pack PATH ARCHIVE``);
- Airflow config ``[paimon] job_python`` / ``[paimon] job_archive`` (env ``AIRFLOW__PAIMON__JOB_PYTHON``, ...);
- this interpreter, when it has the job side.
Imports nothing of Airflow at module level, nothing of the job side ever.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys

# The job side's own dependencies: what Airflow's environment must never need.
JOB_SIDE_MODULES = ("pypaimon", "rocksdict", "pyroaring")
SECTION = "paimon"


class NoJobEnvironment(RuntimeError):
    """No interpreter with the job side is configured and this one has none."""

    retryable: bool = False  # a retry meets the same configuration: the job environment must be set up first


@functools.cache
def has_job_side() -> bool:
    """Whether this interpreter can import the job side (find_spec: nothing is imported)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in JOB_SIDE_MODULES)
    except ImportError:  # a finder that refuses it (a broken install, or a test's blocker)
        return False


def _config(option: str) -> str | None:
    try:
        from airflow.configuration import conf
    except ImportError:  # the job side itself, or a script without Airflow
        return os.environ.get(f"AIRFLOW__{SECTION.upper()}__{option.upper()}") or None
    return conf.get(SECTION, option, fallback=None) or None


def configured_python(extras: dict | None = None) -> str | None:
    """The job environment's interpreter named by the connection extra or Airflow config, else None."""
    python = (extras or {}).get("job_python") or _config("job_python")
    if python and not os.access(python, os.X_OK):
        raise NoJobEnvironment(f"job_python {python!r} (Spark connection extra or [{SECTION}] job_python) "
                               "is not an executable interpreter; create one with "
                               "`python -m airflow_paimon.job_env create PATH`")
    return python


def job_python(extras: dict | None = None) -> str:
    """The interpreter of the job side: the configured one, else this one when it has the job side."""
    python = configured_python(extras)
    if python:
        return python
    if has_job_side():
        return sys.executable
    raise NoJobEnvironment(
        f"this interpreter ({sys.executable}) cannot import {', '.join(JOB_SIDE_MODULES)} and no job environment "
        f"is configured: create one with `python -m airflow_paimon.job_env create PATH` and set [{SECTION}] "
        f"job_python (or the Spark connection's extra job_python) to PATH/bin/python (docs: Install)")


def job_archive(extras: dict | None = None) -> str | None:
    """The packed job environment the executors get through ``spark.archives``, if one is configured."""
    return (extras or {}).get("job_archive") or _config("job_archive")


def runs_here(extras: dict | None = None) -> bool:
    """Whether the job side's steps run in this process: no other interpreter is configured and this one has it."""
    python = configured_python(extras)
    # a venv's python is a symlink: abspath, not realpath
    if python and os.path.abspath(python) != os.path.abspath(sys.executable):
        return False
    return has_job_side()
