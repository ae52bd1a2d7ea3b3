"""What Airflow retries is what the error says (its class's ``retryable``), through real tasks with a retry:
each error class raised by a job in the task process (Spark Connect mode) and by a lifecycle operator's own
work, and a SpecError from a real spark-submit driver. try_number shows whether the task was retried; each
try's result file carries the flag."""
from __future__ import annotations

import dataclasses
import json

import pytest

from dag.dagrun import job_failures, run_dag, use_warehouse
from error_classes import RETRIED, error_classes, instance

pytestmark = pytest.mark.dag
ERRORS = error_classes() + [OSError]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_each_error_is_retried_as_its_class_says(airflow_home, warehouse, monkeypatch, cls):
    from paimon_retry_dags import CONNECT_CONN_ID, retry_connect

    from airflow_paimon.spark.job_registry import JOBS

    use_warehouse(monkeypatch, warehouse)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONNECT_CONN_ID.upper()}",
                       json.dumps({"conn_type": "spark_connect", "host": "localhost", "port": 15002}))

    def expire_snapshots(spec):  # the job, failing before it opens a session on the (absent) server
        raise instance(cls)

    monkeypatch.setitem(JOBS, "expire_snapshots", dataclasses.replace(JOBS["expire_snapshots"],
                                                                  load=lambda: expire_snapshots))
    retryable = RETRIED[cls.__name__]

    run, states, _ = run_dag(retry_connect)

    assert run.state == "failed" and states["expire"] == "failed", states
    assert run.get_task_instance("expire").try_number == (2 if retryable else 1), "retries=1"
    failures = job_failures(warehouse, "test_retry_connect")
    assert [(f["error"].split(":", 1)[0], f["retryable"]) for f in failures] == [(cls.__name__, retryable)] * (
        2 if retryable else 1), failures


def test_a_spec_error_of_a_spark_submit_job_is_not_retried(airflow_home, warehouse, monkeypatch):
    from paimon_retry_dags import retry_submit

    use_warehouse(monkeypatch, warehouse)

    run, states, _ = run_dag(retry_submit)

    assert run.state == "failed" and states["expire"] == "failed", states
    assert run.get_task_instance("expire").try_number == 1, "SpecError: the retry would send the same spec"
    [failure] = job_failures(warehouse, "test_retry_submit")
    assert failure["error"].startswith("SpecError: ") and "from_a_newer_operator" in failure["error"], failure
    assert failure["retryable"] is False


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_an_error_in_the_task_process_is_retried_as_its_class_says(airflow_home, warehouse, monkeypatch, cls):
    from paimon_retry_dags import retry_in_process

    import airflow_paimon.engine.table.lifecycle

    use_warehouse(monkeypatch, warehouse)

    def create_table(catalog_options, identifier, spec):
        raise instance(cls)

    monkeypatch.setattr(airflow_paimon.engine.table.lifecycle, "create_table", create_table)

    run, states, _ = run_dag(retry_in_process)

    assert run.state == "failed" and states["create"] == "failed", states
    assert run.get_task_instance("create").try_number == (2 if RETRIED[cls.__name__] else 1), "retries=1"
