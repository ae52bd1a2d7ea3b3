"""The job frame's Spark Connect parts that need no Connect server: a kill inside the job's own thread (Airflow's
SIGTERM handler interrupting it) stops the job and is reported as such; session conf from spark_conf; a server
that takes no connection, or takes one and never answers, fails the job within seconds; a job environment's step
stuck on a server exits on SIGTERM."""
from __future__ import annotations

import json
import os
import signal
import threading

from airflow_paimon.engine.jobs.specs import ExpireResult, ExpireSpec
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


def _server(answer: bool):
    """A listening socket on loopback that takes connections and, with ``answer``, replies to HTTP/2's preface with
    an empty SETTINGS frame, then never anything else (a stuck Connect server); without, says nothing at all.
    Returns (port, connections taken so far, stop)."""
    import socket

    from airflow_paimon.spark.connect import EMPTY_SETTINGS

    listener, taken, stop = socket.create_server(("127.0.0.1", 0)), [], threading.Event()
    listener.settimeout(0.2)

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            taken.append(conn)
            if answer:
                threading.Thread(target=lambda c=conn: (c.recv(4096), c.sendall(EMPTY_SETTINGS)),
                                 daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()

    def close():
        stop.set()
        for c in taken:
            c.close()
        listener.close()
    return listener.getsockname()[1], taken, close


def test_a_server_that_takes_connections_but_never_answers_fails_the_job_within_seconds(tmp_path, monkeypatch):
    """Before: the session's first call waited for good (seen for more than 10 minutes)."""
    import time

    from pyspark.sql import SparkSession

    from airflow_paimon.spark import connect

    monkeypatch.setattr(connect, "REACH_SECONDS", 1.0)
    port, _, close = _server(answer=False)
    run = JobRun(str(tmp_path / "result.json"), remote=f"sc://127.0.0.1:{port}/;token=t")
    started = time.monotonic()
    try:
        assert execute_job(lambda spec: connect.connect_session(SparkSession.builder, run.remote, run), ExpireSpec,
                           SPEC, run) is False
    finally:
        close()
    assert time.monotonic() - started < 5
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["retryable"] and result["error"] == (
        f"ConnectionError: the Spark Connect server 127.0.0.1:{port} took a connection but did not answer within 1 s; "
        "is it a Spark Connect server, and is it stuck?"), result


def test_a_job_environment_step_stuck_on_its_server_exits_on_sigterm(tmp_path):
    """The task's on_kill sends SIGTERM to the job environment's step process while its job waits on a server that
    stopped answering mid-call: the job is reported killed and the process exits at once (before: the job was
    reported killed, then the process waited at exit for gRPC's threads, more than 30 s)."""
    import subprocess
    import sys
    import time

    import pandas as pd

    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
    from airflow_paimon.handoff import spec_file

    warehouse = str(tmp_path / "warehouse")
    get_or_create_table({"warehouse": warehouse}, "db.t", TableSpec.from_dict(
        {"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"], "options": {"bucket": "1"}}))
    pd.DataFrame({"id": [1, 2], "v": [1.0, 2.0]}).to_parquet(tmp_path / "source.parquet", index=False)
    port, taken, close = _server(answer=True)
    job_result = tmp_path / "job-result.json"
    spec = {"step": "airflow_paimon.job_env.steps:connect_job", "arguments": {
        "job": "assign_and_write", "remote": f"sc://127.0.0.1:{port}", "conf": {}, "result_uri": str(job_result),
        "spec": {"catalog_options": {"warehouse": warehouse}, "table": "db.t", "dag_id": "d", "run_id": "r",
                 "source": {"path": str(tmp_path / "source.parquet")}, "staging_root": str(tmp_path / "staging"),
                 "base_snapshot_id": None, "shards": 2, "index_uri": None}}}
    try:
        with spec_file(spec) as path:
            step = subprocess.Popen([sys.executable, "-m", "airflow_paimon.job_env.step", path,
                                     str(tmp_path / "step.json")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while len(taken) < 2 and step.poll() is None and time.monotonic() < deadline:  # the probe, then gRPC's
                time.sleep(0.1)
            time.sleep(2)  # its first call sent, waiting for an answer that never comes
            assert step.poll() is None, step.communicate()[1][-3000:]
            killed = time.monotonic()
            step.send_signal(signal.SIGTERM)
            try:
                step.wait(timeout=15)
            finally:
                step.kill()
    finally:
        close()
    assert time.monotonic() - killed < 15
    assert json.loads(job_result.read_text()) == {"error": "JobKilled: the task was killed", "retryable": True,
                                                  "rewrite": False}


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
    launcher sets both to --python, else to [paimon] job_python (no Spark connection: it is the server), and
    SPARK_HOME to its own pyspark's."""
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
    # spark-submit's own script would look for its home with PYSPARK_PYTHON's pyspark, which a job environment
    # lacks (the server did not start from a user's Airflow, tests/install): the launcher's pyspark is the home
    import pyspark

    assert env["SPARK_HOME"] == os.path.dirname(pyspark.__file__) and os.path.exists(env["SPARK_HOME"] + "/jars")
