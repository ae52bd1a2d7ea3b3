"""Where the job side runs. Airflow's environment holds the thin provider; everything that imports pypaimon,
rocksdict or pyroaring runs in a job environment: a venv with this provider and its ``jobs`` extra
(``python -m airflow_paimon.job_env create PATH``), or this very interpreter when it can import them (one
environment holding both sides, as this repo's own).

Every path that runs the job side (the operators' steps and Spark jobs, Spark Connect's client, the hook's
test_connection, the Paimon UI page, the warm-up CLI) resolves it once with ``resolve_job_env`` and passes the
JobEnv it got on. The interpreter, first found wins:
- the operator's argument ``job_python``;
- the Spark connection's extra ``job_python`` (the operator's ``spark_conn_id``; ``spark_default`` for the hook's
  test_connection, the UI page and the warm-up CLI);
- Airflow config ``[paimon] job_python`` (env ``AIRFLOW__PAIMON__JOB_PYTHON``);
- this interpreter, when it has the job side.
How long Airflow's side waits for a step that reads a warehouse for it (the connection test, the UI page):
``[paimon] connection_test_timeout`` and ``ui_read_timeout`` (``config_seconds``).
The packed job environment for the executors (``python -m airflow_paimon.job_env pack PATH ARCHIVE``): the Spark
connection's extra ``job_archive``, else ``[paimon] job_archive``.
Imports nothing of Airflow at module level, nothing of the job side ever.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import Callable

from airflow_paimon.engine.errors import ConfigError

# The job side's own dependencies: what Airflow's environment must never need.
JOB_SIDE_MODULES = ("pypaimon", "rocksdict", "pyroaring")
SECTION = "paimon"
DEFAULT_SPARK_CONN_ID = "spark_default"
# [paimon] options of seconds (config_seconds) and their defaults: how long Airflow's side waits for a step that
# reads a warehouse for it (an unreachable object store otherwise holds it while the store's client retries: 85 s)
TIMEOUTS = {"connection_test_timeout": 10.0, "ui_read_timeout": 5.0}


class NoJobEnvironment(RuntimeError):
    """No interpreter with the job side is configured and this one has none, or the configured one is none."""

    retryable: bool = False  # a retry meets the same configuration: the job environment must be set up first


@dataclass(frozen=True)
class JobEnv:
    """Where the job side runs, as resolve_job_env found it. ``python``: the configured interpreter (None: this
    one, when it has the job side); ``source``: where ``python`` was set (for errors); ``archive``: the packed job
    environment for the executors, if any."""

    python: str | None = None
    source: str = ""
    archive: str | None = None


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


def config_seconds(option: str) -> float:
    """A ``[paimon]`` option of seconds (one of TIMEOUTS), its default when unset; a value that is not a finite
    number above 0 is refused, naming the option."""
    import math

    value = _config(option) or str(TIMEOUTS[option])
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigError(f"[{SECTION}] {option} = {value!r} is not a number of seconds above 0 "
                         f"(AIRFLOW__{SECTION.upper()}__{option.upper()})")
    return seconds


def connection_extras(conn_id: str) -> dict:
    """The extra of Airflow connection ``conn_id``; {} when there is no such connection (or no Airflow)."""
    try:
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException
    except ImportError:  # the job side itself, or a script without Airflow
        return {}
    try:
        return BaseHook.get_connection(conn_id).extra_dejson
    except AirflowNotFoundException:  # the connection is optional here: the config or this interpreter decide
        return {}


def _given(value) -> str | None:
    """A setting that may be a rendered template: None / "" / "None" mean not given."""
    return None if value in (None, "", "None") else str(value)


def resolve_job_env(job_python: str | None = None, spark_conn_id: str | None = DEFAULT_SPARK_CONN_ID,
                    extras: Callable[[str], dict] = connection_extras) -> JobEnv:
    """The one resolution of where the job side runs (precedence in this module's docstring): ``job_python``, an
    operator's argument; ``spark_conn_id``: the Spark connection whose extra is read (None: none); ``extras``: how
    a connection's extra is read (the UI's api-server reads its own way). A configured interpreter that is not
    executable is refused here, naming where it was set."""
    conn_extras = extras(spark_conn_id) if spark_conn_id else {}
    python, source = _given(job_python), "the operator's argument job_python"
    if python is None:
        python, source = _given(conn_extras.get("job_python")), f"Spark connection {spark_conn_id!r} extra job_python"
    if python is None:
        python, source = _config("job_python"), f"[{SECTION}] job_python"
    if python is None:
        source = ""
    elif not os.access(python, os.X_OK):
        raise NoJobEnvironment(f"job_python {python!r} (set by {source}) is not an executable interpreter; create "
                               "one with `python -m airflow_paimon.job_env create PATH` and name PATH/bin/python")
    archive = _given(conn_extras.get("job_archive")) or _config("job_archive")
    return JobEnv(python, source, archive)


def job_python(env: JobEnv) -> str:
    """The interpreter of the job side: the configured one, else this one when it has the job side."""
    if env.python:
        return env.python
    if has_job_side():
        return sys.executable
    raise NoJobEnvironment(
        f"this interpreter ({sys.executable}) cannot import {', '.join(JOB_SIDE_MODULES)} and no job environment "
        f"is configured (not by an operator's argument job_python, the Spark connection's extra job_python nor "
        f"[{SECTION}] job_python): create one with `python -m airflow_paimon.job_env create PATH` and set one of "
        f"them to PATH/bin/python (docs: Install)")


def runs_here(env: JobEnv) -> bool:
    """Whether the job side's steps run in this process: no other interpreter is configured and this one has it."""
    # a venv's python is a symlink: abspath, not realpath
    if env.python and os.path.abspath(env.python) != os.path.abspath(sys.executable):
        return False
    return has_job_side()
