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
