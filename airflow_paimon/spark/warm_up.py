"""Writes a job's class-data-sharing archive (spark/class_data_sharing.py) off the task's critical path: a
spark-submit of a small workload (spark_jobs/warm_up.py) that loads the Spark classes our jobs' drivers load,
its JVM dumping them at exit. The archive is named for the job's kind (it starts a Spark session, or is
driver-only), its executables and class-path conf, as the runs of every job of that kind look it up.

- A job's run that found no archive starts a warm-up for it in the background (its own session, niced), once
  the run succeeded: the first run waits for no dump (10-40 s on 2 cores), the runs after it (of any job of the
  same kind) map the archive.
- ``python -m airflow_paimon.spark.warm_up [--jobs NAME ...]`` writes the archives of every job (or of those
  named) in the foreground for the default spark-submit (the Spark connection of a ``local`` master, the job
  environment's interpreter: ``--python``, else as a task resolves it, airflow_paimon/job_env):
  run it once after installing, and not even a first run goes without one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from airflow_paimon.spark.class_data_sharing import CLASS_PATH_CONF, STALE_SECONDS, DriverArchive
from airflow_paimon.spark.submit import DRIVER_JAVA_OPTIONS, DRIVER_PYTHON, LOG_LEVEL, PYTHON, entry_script


def warm_up_conf(conf: dict[str, str]) -> dict[str, str]:
    """What of a job's conf the warm-up keeps: what decides the driver JVM's classes (its class path, its JVM
    options: ours, no archive to map) and the driver's Python, also the workers' (a local master, whatever the
    job's was). Nothing else (no catalog options, no secrets)."""
    python = conf.get(DRIVER_PYTHON) or conf.get(PYTHON) or sys.executable
    return {**{k: conf[k] for k in CLASS_PATH_CONF if k in conf}, PYTHON: python, DRIVER_PYTHON: python,
            DRIVER_JAVA_OPTIONS: conf.get(DRIVER_JAVA_OPTIONS, ""), "spark.ui.enabled": "false", LOG_LEVEL: "WARN"}


def warm_up(driver_only: bool, conf: dict[str, str], env: dict[str, str]) -> bool:
    """Write the archive of the ``driver_only`` (or session) jobs for ``conf`` (warm_up_conf's) unless there is
    one; True when there is one after."""
    archive = DriverArchive.for_driver(driver_only, conf, env)
    if archive.path.exists():
        return True
    dump = archive.dump_options()
    spark_submit = shutil.which("spark-submit", path=env.get("PATH"))
    if not dump or spark_submit is None:
        return False
    run_conf = {**conf, DRIVER_JAVA_OPTIONS: f"{conf[DRIVER_JAVA_OPTIONS]} {dump}".strip()}
    cmd = [spark_submit, "--master", "local[1]", *[x for k, v in run_conf.items() for x in ("--conf", f"{k}={v}")],
           "--name", f"airflow-paimon-warm-up-{archive.kind}", entry_script("warm_up.py"), archive.kind]
    succeeded = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    archive.finish(succeeded)
    return archive.path.exists()


def start_in_background(driver_only: bool, conf: dict[str, str], env: dict[str, str]) -> None:
    """Start warm_up in a process of its own session (a task's end or kill leaves it running), at a lower CPU
    priority than the DAG's next tasks; unless another one is writing the same archive."""
    conf = warm_up_conf(conf)
    archive = DriverArchive.for_driver(driver_only, conf, env)
    try:
        archive.lock.parent.mkdir(parents=True, exist_ok=True)
        if archive.lock.exists() and archive.lock.stat().st_mtime < time.time() - STALE_SECONDS:
            archive.lock.unlink(missing_ok=True)  # of a warm-up that never finished
        os.close(os.open(archive.lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:  # one is running, or the cache cannot be written
        return
    args = ["--conf", json.dumps(conf), "--lock", str(archive.lock)] + (["--driver-only"] * driver_only)
    subprocess.Popen([sys.executable, "-m", "airflow_paimon.spark.warm_up", *args], env=env, start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: os.nice(10))


def default_settings(python: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """The conf and environment of a job's spark-submit on a ``local`` master with no extras (backends.py), its
    Python as a task's would be resolved (airflow_paimon/job_env): ``python`` (``--python``), else the
    ``spark_default`` connection's extra ``job_python``, else ``[paimon] job_python``, else this interpreter."""
    from airflow_paimon.job_env import DEFAULT_SPARK_CONN_ID, resolve_job_env
    from airflow_paimon.spark.submit import submit_conf, submit_settings

    settings = submit_settings({}, "local[2]", None, {}, job_env=resolve_job_env(python, DEFAULT_SPARK_CONN_ID))
    return warm_up_conf(submit_conf(settings.python, settings.driver_python)), settings.env


def main(argv: list[str] | None = None) -> int:
    from airflow_paimon.spark.job_registry import JOBS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="*", default=list(JOBS), choices=list(JOBS))
    parser.add_argument("--python", help="the job environment's interpreter the jobs' drivers run (default: the "
                                         "spark_default connection's extra job_python, else [paimon] job_python, "
                                         "else this interpreter)")
    parser.add_argument("--conf", help=argparse.SUPPRESS)  # a task's warm_up_conf, JSON (start_in_background)
    parser.add_argument("--driver-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--lock", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.conf:
            return 0 if warm_up(args.driver_only, json.loads(args.conf), dict(os.environ)) else 1
        conf, env = default_settings(args.python)
        failed = []
        for driver_only in sorted({JOBS[name].driver_only for name in args.jobs}):
            jobs = " ".join(name for name in args.jobs if JOBS[name].driver_only == driver_only)
            started = time.perf_counter()
            ok = warm_up(driver_only, conf, env)
            print(f"{'driver-only' if driver_only else 'session'} archive, for {jobs}: "
                  f"{'written' if ok else 'none'} ({time.perf_counter() - started:.1f} s)")
            failed += [] if ok else [jobs]
        return 1 if failed else 0
    finally:
        if args.lock:
            Path(args.lock).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
