"""Airflow's own reads of a warehouse are bounded and fail in words (issue 56 item 3): the connection test and the
Paimon page give up after ``[paimon] connection_test_timeout`` / ``ui_read_timeout`` seconds and say which
warehouse and endpoint timed out; the page reads its connections at once and keeps their results a while; a
table page whose read fails shows the error (never a 500); a missing local warehouse says so."""
from __future__ import annotations

import json
import socket
import sys
import time

import pytest
from held_store import held_endpoint
from starlette.requests import Request

from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.job_env import JobEnv, config_seconds
from airflow_paimon.job_env import step as step_module
from airflow_paimon.job_env import steps
from airflow_paimon.job_env.step import StepError, job_step, run_step
from airflow_paimon.ui import app

SLACK = 2.0  # seconds beyond a timeout that giving up may take on a loaded machine
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def nothing_configured(monkeypatch):
    """This interpreter runs the steps (no job environment configured) and no page read is remembered."""
    for name in ("AIRFLOW__PAIMON__JOB_PYTHON", "AIRFLOW_CONN_SPARK_DEFAULT", "AIRFLOW__PAIMON__UI_READ_TIMEOUT",
                 "AIRFLOW__PAIMON__CONNECTION_TEST_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # what pypaimon sets process-wide, kept to this test
    app.READS.clear()
    yield
    app.READS.clear()


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connection(monkeypatch, conn_id: str, warehouse: str, **catalog_options) -> PaimonHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(
        {"conn_type": "paimon", "extra": {"warehouse": warehouse, "catalog_options": catalog_options}}))
    return PaimonHook(conn_id)


def s3_connection(monkeypatch, endpoint: str, conn_id: str = "paimon_unreachable") -> PaimonHook:
    return connection(monkeypatch, conn_id, "s3://lake/warehouse", **{
        "fs.s3.endpoint": endpoint, "fs.s3.accessKeyId": "key", "fs.s3.accessKeySecret": "secret",
        "fs.s3.region": "us-east-1", "fs.s3.path-style-access": "true"})


def page_request() -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b""})


def test_the_connection_test_of_an_unreachable_store_times_out_in_words(monkeypatch):
    """In this process (the api-server's, for the Test button): an endpoint that never answers (held_store.py: a
    closed port would leave pyarrow's client retrying in this process for 85 s after the test)."""
    monkeypatch.setenv("AIRFLOW__PAIMON__CONNECTION_TEST_TIMEOUT", "1")
    with held_endpoint() as endpoint:
        hook = s3_connection(monkeypatch, endpoint)
        started = time.monotonic()
        ok, message = hook.test_connection()
        elapsed = time.monotonic() - started
    assert not ok
    # the Test button tests the form's values under a random connection id: the warehouse and endpoint, no id
    assert message == ("reading warehouse s3://lake/warehouse timed out after 1 s "
                       f"(is the endpoint {endpoint} reachable?)")
    assert elapsed < 1 + SLACK, elapsed


def test_a_timeout_in_the_job_environment_is_a_timeout_not_a_start_failure(monkeypatch, tmp_path):
    """The step's process started and was killed at the timeout: a TimeoutError (an OSError too), not "did not
    start"; an interpreter that cannot be run still is a start failure. The store: a port where nothing listens
    (the killed process takes its client's retries with it)."""
    monkeypatch.setattr(step_module, "runs_here", lambda env: False)  # this interpreter, as a job environment
    monkeypatch.setenv("AIRFLOW__PAIMON__CONNECTION_TEST_TIMEOUT", "1.5")
    endpoint = f"http://127.0.0.1:{free_port()}"
    hook = s3_connection(monkeypatch, endpoint)
    started = time.monotonic()
    ok, message = hook.test_connection()
    assert time.monotonic() - started < 1.5 + SLACK
    assert not ok and "timed out after 1.5 s" in message and endpoint in message, message
    assert "did not start" not in message
    missing = str(tmp_path / "no-python")
    with pytest.raises(StepError, match=f"{missing} left no result; it did not start"):
        run_step(steps.list_databases, JobEnv(missing), timeout=5, catalog_options={"warehouse": str(tmp_path)})
    with pytest.raises(TimeoutError):  # the error run_step raises, whichever environment runs the step
        run_step(steps.list_databases, JobEnv(sys.executable), timeout=0.01, catalog_options=hook.catalog_options())


def test_a_missing_local_warehouse_says_so_on_the_page_and_in_the_connection_test(monkeypatch, tmp_path):
    missing = str(tmp_path / "warehouse")
    hook = connection(monkeypatch, "paimon_missing", missing)
    ok, message = hook.test_connection()
    assert not ok and f"warehouse {missing} does not exist" in message, message
    monkeypatch.setattr(app, "paimon_hooks", lambda: {"paimon_missing": hook})
    monkeypatch.setattr(app, "recent_runs", lambda: [])
    html = app.overview(page_request())
    assert f"warehouse {missing} does not exist" in html  # not a connection without tables
    response = app.table("paimon_missing", "db.t")
    assert response.status_code == 200 and f"warehouse {missing} does not exist" in response.body.decode()
    assert not (tmp_path / "warehouse").exists()  # reading made none


def sleeping_summaries(calls: list, seconds: float):
    """A stand-in for the overview's read that takes ``seconds`` for a connection whose warehouse says "slow"."""
    @job_step
    def table_summaries(catalog_options: dict) -> list[dict]:
        calls.append(catalog_options["warehouse"])
        if "slow" in catalog_options["warehouse"]:
            time.sleep(seconds)
        return [{"identifier": "db.t", "bucket_mode": "HASH_FIXED", "snapshot_id": 3, "records": 1234,
                 "commit_kind": "APPEND"}]
    return table_summaries


def test_the_overview_reads_connections_at_once_and_keeps_their_results(monkeypatch):
    """Two connections slower than the timeout cost the page one timeout, not two; a reload within CACHE_SECONDS
    reads nothing again; a fast connection's tables are shown beside the others' timeouts."""
    monkeypatch.setenv("AIRFLOW__PAIMON__UI_READ_TIMEOUT", "1")
    calls: list = []
    monkeypatch.setattr(app.steps, "table_summaries", sleeping_summaries(calls, seconds=4))
    hooks = {"a_slow": connection(monkeypatch, "a_slow", "s3://slow-a/wh", **{"fs.s3.endpoint": "http://a:9000"}),
             "b_slow": connection(monkeypatch, "b_slow", "s3://slow-b/wh", **{"fs.s3.endpoint": "http://b:9000"}),
             "c_fast": connection(monkeypatch, "c_fast", "s3://fast/wh")}
    monkeypatch.setattr(app, "paimon_hooks", lambda: hooks)
    started = time.monotonic()
    html = app.overview(page_request())
    elapsed = time.monotonic() - started
    assert elapsed < 1 + SLACK, elapsed  # one timeout; read one after another, two
    for conn_id, warehouse, endpoint in (("a_slow", "s3://slow-a/wh", "http://a:9000"),
                                         ("b_slow", "s3://slow-b/wh", "http://b:9000")):
        assert (f"reading warehouse {warehouse} of connection {conn_id} timed out after 1 s "
                f"(is the endpoint {endpoint} reachable?)") in html
    assert "reading warehouse s3://fast/wh" not in html and "1,234" in html
    assert sorted(calls) == ["s3://fast/wh", "s3://slow-a/wh", "s3://slow-b/wh"]

    started = time.monotonic()
    assert app.overview(page_request()) == html  # kept: neither the tables nor the timeouts are read again
    assert time.monotonic() - started < 0.5 and len(calls) == 3
    app.READS.clear()
    app.overview(page_request())
    assert len(calls) == 6  # once forgotten, read again


def test_a_table_page_whose_read_fails_or_times_out_shows_the_error(monkeypatch):
    monkeypatch.setenv("AIRFLOW__PAIMON__UI_READ_TIMEOUT", "1")
    monkeypatch.setattr(app, "recent_runs", lambda: [])
    endpoint = "http://store.invalid:9000"  # named in the words; never reached (the page's read is a stand-in)
    hook = s3_connection(monkeypatch, endpoint)
    monkeypatch.setattr(app, "paimon_hooks", lambda: {"paimon_unreachable": hook})

    @job_step
    def failing_page(**_):
        raise ValueError(f"a file of the warehouse said {SCRIPT}")

    monkeypatch.setattr(app.steps, "table_page", failing_page)
    response = app.table("paimon_unreachable", "db.t")
    body = response.body.decode()
    assert response.status_code == 200 and SCRIPT not in body
    assert "ValueError: a file of the warehouse said &lt;script&gt;alert(1)&lt;/script&gt;" in body

    @job_step
    def slow_page(**_):
        time.sleep(4)

    monkeypatch.setattr(app.steps, "table_page", slow_page)
    started = time.monotonic()
    response = app.table("paimon_unreachable", "db.t")
    assert time.monotonic() - started < 1 + SLACK
    assert response.status_code == 504
    assert (f"reading warehouse s3://lake/warehouse of connection paimon_unreachable timed out after 1 s "
            f"(is the endpoint {endpoint} reachable?)") in response.body.decode()


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf"])
def test_a_timeout_setting_that_is_no_number_of_seconds_is_named(monkeypatch, value):
    assert config_seconds("ui_read_timeout") == 5 and config_seconds("connection_test_timeout") == 10  # defaults
    monkeypatch.setenv("AIRFLOW__PAIMON__UI_READ_TIMEOUT", value)
    with pytest.raises(ValueError, match=r"\[paimon\] ui_read_timeout = .* is not a number of seconds above 0"):
        config_seconds("ui_read_timeout")
