"""How a job is submitted, apart from the job itself: which Python the driver and executors run, where
``spark-submit`` is found, and how a killed task takes its Spark processes down with it.

Settings, first found wins:
- Python of the executors: the operator's ``spark_conf["spark.pyspark.python"]``, the Spark connection's
  extra ``pyspark-python``, else — for a ``local[...]`` master only — the Airflow worker's interpreter (on a
  cluster the executors' Python is the cluster's business: Spark's default, or ``PYSPARK_PYTHON`` in
  ``spark-env.sh``).
- Python of the driver: ``spark_conf["spark.pyspark.driver.python"]``, the extra ``pyspark-driver-python``,
  else the executors' setting; in client deploy mode (the driver runs here) the worker's interpreter.
- ``spark-submit``: the extra ``spark-bin-dir`` (a directory holding it) or the operator's ``spark_bin_dir``,
  else the worker interpreter's ``bin/`` when pyspark installed it there, else ``PATH``. (SparkSubmitHook
  accepts only the names spark-submit / spark2-submit / spark3-submit and finds them through PATH, so the
  directory goes first on the PATH of that one process.)
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PYTHON, DRIVER_PYTHON = "spark.pyspark.python", "spark.pyspark.driver.python"


@dataclass(frozen=True)
class SubmitSettings:
    python: str | None          # spark.pyspark.python, None: Spark's default on the executors
    driver_python: str | None   # spark.pyspark.driver.python
    env: dict[str, str]         # environment of the spark-submit process


def is_local(master: str | None) -> bool:
    return (master or "").startswith("local")


def submit_settings(extras: dict, master: str | None, deploy_mode: str | None, spark_conf: dict,
                    spark_bin_dir: str | None = None) -> SubmitSettings:
    """The settings for one spark-submit from the Spark connection (``extras``, ``master``, ``deploy_mode``)
    and the operator's ``spark_conf``."""
    worker_python = sys.executable
    python = spark_conf.get(PYTHON) or extras.get("pyspark-python") or (worker_python if is_local(master) else None)
    driver_python = spark_conf.get(DRIVER_PYTHON) or extras.get("pyspark-driver-python")
    if not driver_python:
        driver_python = worker_python if (deploy_mode or "client") == "client" else python
    # the driver spark-submit starts is a classic one, whatever pyspark's Connect mode this process is in
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    bin_dir = extras.get("spark-bin-dir") or spark_bin_dir
    if not bin_dir and (Path(worker_python).parent / "spark-submit").exists():
        bin_dir = str(Path(worker_python).parent)
    if bin_dir:
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return SubmitSettings(python, driver_python, env)


def stop_process_group(process: subprocess.Popen | None, grace_seconds: float = 10.0) -> None:
    """SIGTERM the process group of a spark-submit started with ``start_new_session=True`` — its JVM (the
    driver in client mode), the Python driver and the Python workers — so Spark's shutdown hooks release the
    cluster's executors; SIGKILL whatever is still there after ``grace_seconds``."""
    if process is None or process.poll() is not None:
        return
    try:
        group = os.getpgid(process.pid)
    except ProcessLookupError:
        return
    if group == os.getpgid(0):  # never signal the task's own group
        process.terminate()
        return
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal_group(group, signal.SIGKILL)  # the rest of the group (the Python driver may outlive the JVM)
    process.wait()


def _signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass
