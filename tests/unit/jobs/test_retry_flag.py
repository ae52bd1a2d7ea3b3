"""Retry is a property of the error: every error class of the package declares ``retryable`` where it is
defined, and the job frame hands that flag, not the class's name, to the operator through the result file."""
from __future__ import annotations

import json

import pendulum
import pytest
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_paimon.engine.jobs.specs import ExpireSpec
from airflow_paimon.operators.maintenance import PaimonExpireSnapshotsOperator
from airflow_paimon.spark.job_frame import JobRun, execute_job
from error_classes import RETRIED, error_classes, instance

ERRORS = error_classes()


def test_each_error_class_has_its_expected_retry():
    assert sorted(cls.__name__ for cls in ERRORS) == sorted(set(RETRIED) - {"OSError"})


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_class_declares_retryable_where_it_is_defined(cls):
    # in the class's own body: a subclass inheriting its base's flag would let a new class forget to decide
    assert isinstance(vars(cls).get("retryable"), bool), f"{cls.__module__}.{cls.__name__} declares no retryable"
    assert cls.retryable is RETRIED[cls.__name__]


def test_an_error_not_of_this_provider_is_retried():
    from airflow_paimon.engine.errors import is_retryable

    assert is_retryable(OSError("connection reset")) and is_retryable(RuntimeError("crash"))


@pytest.mark.parametrize("cls", ERRORS + [OSError], ids=lambda c: c.__name__)
def test_the_flag_crosses_the_result_file_and_decides_the_retry(tmp_path, cls):
    result_uri = str(tmp_path / "result.json")

    def job(spec):
        raise instance(cls)

    spec = {"catalog_options": {"warehouse": str(tmp_path / "warehouse")}, "table": "db.t"}
    assert execute_job(job, ExpireSpec, spec, JobRun(result_uri)) is False
    failed = json.loads((tmp_path / "result.json").read_text())
    expected = RETRIED[cls.__name__]
    assert failed["error"].startswith(f"{cls.__name__}: ") and failed["retryable"] is expected
    with DAG("d", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        expire = PaimonExpireSnapshotsOperator(task_id="expire", table="db.t")
    with pytest.raises(AirflowException, match=f"expire_snapshots for table db.t failed: {cls.__name__}: ") as e:
        expire._job_failed(result_uri, "spark-submit exited with 1")
    assert issubclass(e.type, AirflowFailException) is not expected, "AirflowFailException: Airflow skips the retries"
