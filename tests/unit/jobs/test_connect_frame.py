"""The job frame's Spark Connect parts that need no server: a kill inside the job's own thread (Airflow's
SIGTERM handler interrupting it) stops the job and is reported as such; session conf from spark_conf."""
from __future__ import annotations

import json
import os
import signal
import threading

from airflow_paimon.engine.specs import ExpireResult, ExpireSpec
from airflow_paimon.spark.connect import session_conf
from airflow_paimon.spark.job_frame import JobRun, current_run, execute_job

SPEC = {"catalog_options": {"warehouse": "/nowhere", "token": "s3cr3t"}, "table": "db.t"}


def test_a_kill_in_the_jobs_thread_stops_it_and_is_reported(tmp_path):
    run = JobRun(str(tmp_path / "result.json"))
    reached = []

    def job(spec):
        previous = signal.signal(signal.SIGUSR1, lambda *_: current_run().kill())  # as Airflow's SIGTERM handler
        try:
            os.kill(os.getpid(), signal.SIGUSR1)
            reached.append("after the kill")  # never: the handler raised into the job
        finally:
            signal.signal(signal.SIGUSR1, previous)
        return ExpireResult.from_dict({})

    assert threading.current_thread() is threading.main_thread()
    assert execute_job(job, ExpireSpec, SPEC, run) is False
    assert reached == [] and run.killed and run.thread is None
    assert json.loads((tmp_path / "result.json").read_text()) == {"error": "JobKilled: the task was killed",
                                                                  "retryable": True, "rewrite": False}


def test_a_kill_from_another_thread_does_not_raise_there(tmp_path):
    run = JobRun(str(tmp_path / "result.json"))
    run.thread = threading.get_ident() + 1  # the job runs elsewhere
    run.kill()
    assert run.killed


def test_session_conf_keeps_the_sessions_keys_on_top_of_the_jobs_defaults():
    conf = session_conf({"spark.sql.session.timeZone": "Europe/Paris", "spark.sql.ansi.enabled": "true",
                         "spark.executor.memory": "4g"})
    assert conf == {"spark.sql.session.timeZone": "Europe/Paris", "spark.sql.ansi.enabled": "true",
                    "spark.connect.progress.reportInterval": "-1"}
    assert session_conf({}) == {"spark.sql.session.timeZone": "UTC", "spark.connect.progress.reportInterval": "-1"}


def test_a_server_that_takes_no_connection_fails_the_job_at_once_and_retryably(tmp_path):
    import socket
    import time

    from pyspark.sql import SparkSession

    from airflow_paimon.spark.connect import connect_session

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = JobRun(str(tmp_path / "result.json"), remote=f"sc://localhost:{port}/;token=t")
    started = time.monotonic()

    def job(spec):
        connect_session(SparkSession.builder, run.remote, run)

    assert execute_job(job, ExpireSpec, SPEC, run) is False
    assert time.monotonic() - started < 5  # pyspark's own client would retry for 10 minutes
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["retryable"] and result["error"].startswith(f"ConnectionError: the Spark Connect server "
                                                               f"localhost:{port} took no connection"), result


def test_a_job_sessions_retries_are_bounded():
    from pyspark.sql.connect.client.retries import DefaultPolicy

    from airflow_paimon.spark.connect import bounded_retries

    class Client:
        def set_retry_policies(self, policies):
            self.policies = list(policies)

    session = type("Session", (), {"client": Client()})()
    bounded_retries(session)
    [policy] = session.client.policies
    waits, backoff = 0.0, policy.initial_backoff
    for _ in range(policy.max_retries):  # the longest pyspark waits before giving up, jitter aside
        waits, backoff = waits + min(backoff, policy.max_backoff), backoff * policy.backoff_multiplier
    assert isinstance(policy, DefaultPolicy) and waits / 1000 < 30, waits


def test_the_servers_python_workers_run_the_interpreter_it_was_given(tmp_path, monkeypatch):
    """Spark 4.2's Connect planner starts Python workers with PYSPARK_PYTHON, not spark.pyspark.python: the
    launcher sets both to --python, else to [paimon] job_python (no Spark connection: it is the server)."""
    import sys

    from airflow_paimon.spark.connect_server import server_command

    python = tmp_path / "jobs" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    command, env = server_command(python=str(python), master="local[2]")
    assert env["PYSPARK_PYTHON"] == str(python) and f"spark.pyspark.python={python}" in command
    monkeypatch.setenv("AIRFLOW__PAIMON__JOB_PYTHON", str(python))
    command, env = server_command(master="local[2]")
    assert env["PYSPARK_PYTHON"] == str(python) and f"spark.pyspark.python={python}" in command
