"""How a job is submitted, apart from the job itself: the Spark conf it gets, which Python the driver and
executors run, where ``spark-submit`` is found, and how a killed task takes its Spark processes down with it.
Used by the spark-submit backend (airflow_paimon/spark/backends.py), the Spark Connect session conf
(spark/connect.py) and the Connect server (spark/connect_server.py); imports nothing of Airflow or Spark.

Settings, first found wins (the job environment: airflow_paimon/job_env):
- Python of the executors: the operator's ``spark_conf["spark.pyspark.python"]``, the Spark connection's
  extra ``pyspark-python``, with a packed job environment (extra ``job_archive`` or ``[paimon] job_archive``)
  ``./env/bin/python`` of that archive shipped as ``spark.archives=ARCHIVE#env``, else — for a ``local[...]``
  master only — the job environment's interpreter (resolve_job_env's: the operator's ``job_python``, the
  connection's extra ``job_python``, ``[paimon] job_python``, this interpreter); on a cluster without an archive
  the executors' Python is the cluster's business: Spark's default, or ``PYSPARK_PYTHON`` in ``spark-env.sh``.
- Python of the driver: ``spark_conf["spark.pyspark.driver.python"]``, the extra ``pyspark-driver-python``,
  else in client deploy mode (the driver runs here) the job environment's interpreter, else the executors'.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_paimon.job_env import JobEnv

PYTHON, DRIVER_PYTHON = "spark.pyspark.python", "spark.pyspark.driver.python"
# A packed job environment unpacks as ./env in each executor's (and a cluster-mode driver's) working directory.
ARCHIVES, ARCHIVE_ALIAS = "spark.archives", "env"

# The driver JVM of a short job: C1 only (no C2 compiler threads competing for the cores) and the serial GC.
# Cuts 2-3 s off every spark-submit on 2 cores (tests/benchmarks/README.md); replace it via spark_conf for big drivers.
# Metaspace's first GC threshold above what Spark's classes take: otherwise loading them triggers 3-4 full GCs
# (0.1-0.2 s of pauses per job, in the jobs' GC logs).
SHORT_JOB_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:MetaspaceSize=256m"
DRIVER_JAVA_OPTIONS, LOG_LEVEL = "spark.driver.extraJavaOptions", "spark.log.level"
# Our log4j2 configuration of the driver JVM: Spark's lines below spark.log.level never reach the task log, not
# even those printed before Spark applies that level (JVM start, SparkContext's first lines).
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")


def submit_conf(python: str | None, driver_python: str | None = None,
                spark_conf: dict[str, Any] | None = None) -> dict[str, str]:
    """The Spark conf a job is submitted with: ours, the user's ``spark_conf`` on top (the operator's; the
    benchmarks' too). ``python``: the interpreter of the Python workers (None: Spark's default),
    ``driver_python``: the driver's (default ``python``); see submit_settings below.

    A ``spark.driver.extraJavaOptions`` of the user's replaces SHORT_JOB_JAVA_OPTIONS, but the driver still
    gets our log4j2 configuration, in front (a ``-Dlog4j2.configurationFile`` of the user's comes later and wins)."""
    pythons = {"spark.pyspark.python": python, "spark.pyspark.driver.python": driver_python or python}
    conf = {**{k: v for k, v in pythons.items() if v},
            # No Spark UI: these jobs are short, the Airflow UI shows their logs and result.
            "spark.ui.enabled": "false",
            # Python workers fork from a daemon that imported what they need once (airflow_paimon/spark/daemon.py)
            "spark.python.daemon.module": "airflow_paimon.spark.daemon",
            DRIVER_JAVA_OPTIONS: SHORT_JOB_JAVA_OPTIONS,
            # Timestamps never depend on the host's time zone (a user's spark_conf may still set another)
            "spark.sql.session.timeZone": "UTC",
            # Spark's own INFO lines (stages, block managers, ...) drown the task log; the operators log one
            # progress line per job. spark_conf {"spark.log.level": "INFO"} brings them back.
            LOG_LEVEL: "WARN",
            **(spark_conf or {})}
    ours = log4j2_java_options(conf[LOG_LEVEL] or "WARN")
    conf[DRIVER_JAVA_OPTIONS] = f"{ours} {conf[DRIVER_JAVA_OPTIONS] or ''}".rstrip()
    return conf


def with_driver_archive(driver_only: bool, conf: dict[str, str], spark_conf: dict[str, Any] | None,
                        env: dict[str, str]):
    """Add the class-data-sharing archive of the job's kind (``driver_only`` or a session's;
    spark/class_data_sharing.py) to ``conf``'s driver JVM options, unless the user's ``spark_conf`` set its own;
    the DriverArchive (None then), whose ``finish`` the caller calls once the spark-submit ended."""
    from airflow_paimon.spark.class_data_sharing import DriverArchive

    if DRIVER_JAVA_OPTIONS in (spark_conf or {}):
        return None
    archive = DriverArchive.for_driver(driver_only, conf, env)
    conf[DRIVER_JAVA_OPTIONS] = f"{conf[DRIVER_JAVA_OPTIONS]} {archive.java_options()}".rstrip()
    return archive


def log4j2_java_options(level: str) -> str:
    """The driver's JVM options for our log4j2 configuration at ``level`` (a file URI: no space to quote)."""
    return f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} -Dairflow_paimon.spark.log.level={level}"


def entry_script(script: str) -> str:
    """The path of ``script`` (a file of spark_jobs/): the checkout's spark_jobs/, else the copy packaged with
    the wheel (airflow_paimon/_spark_jobs/)."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "spark_jobs" / script, package / "_spark_jobs" / script):
        if candidate.exists():
            return str(candidate)
    raise FileNotFoundError(f"Spark job {script} not found next to {package}")


@dataclass(frozen=True)
class SubmitSettings:
    python: str | None          # spark.pyspark.python, None: Spark's default on the executors
    driver_python: str | None   # spark.pyspark.driver.python
    env: dict[str, str]         # environment of the spark-submit process
    conf: dict[str, str] = field(default_factory=dict)  # spark.archives of a packed job environment


def is_local(master: str | None) -> bool:
    return (master or "").startswith("local")


def submit_settings(extras: dict, master: str | None, deploy_mode: str | None, spark_conf: dict,
                    spark_bin_dir: str | None = None, *, job_env: JobEnv) -> SubmitSettings:
    """The settings for one spark-submit from the Spark connection (``extras``, ``master``, ``deploy_mode``),
    the operator's ``spark_conf`` and where the job side runs (``job_env``: resolve_job_env's)."""
    from airflow_paimon.job_env import job_python

    archive, conf = job_env.archive, {}
    if archive:
        conf[ARCHIVES] = ",".join(filter(None, [spark_conf.get(ARCHIVES), f"{archive}#{ARCHIVE_ALIAS}"]))
    python = (spark_conf.get(PYTHON) or extras.get("pyspark-python")
              or (f"./{ARCHIVE_ALIAS}/bin/python" if archive else None)
              or (job_python(job_env) if is_local(master) else None))
    driver_python = spark_conf.get(DRIVER_PYTHON) or extras.get("pyspark-driver-python")
    if not driver_python:
        driver_python = job_python(job_env) if (deploy_mode or "client") == "client" else python
    # the driver spark-submit starts is a classic one, whatever pyspark's Connect mode this process is in
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    bin_dir = extras.get("spark-bin-dir") or spark_bin_dir
    if not bin_dir and (Path(sys.executable).parent / "spark-submit").exists():
        bin_dir = str(Path(sys.executable).parent)
    if bin_dir:
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return SubmitSettings(python, driver_python, env, conf)


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
