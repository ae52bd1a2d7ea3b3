"""Issue 56 item 1: one way to say where the job side runs (airflow_paimon/job_env resolve_job_env), honoured on
every path. For each way of giving ``job_python`` — the operator's argument, the Spark connection's extra
(``AIRFLOW_CONN_SPARK_DEFAULT``), ``AIRFLOW__PAIMON__JOB_PYTHON`` — each path must start the job side with that
interpreter: the lifecycle operators' steps, the bootstrap and compact decisions, spark-submit's driver Python,
the Spark Connect client, PaimonHook.test_connection, the Paimon UI page's reads, the warm-up CLI.

The interpreter is a shell script that appends its arguments to a marker file. Most tests use a stub that then
exits 3 (the step fails at once with ProcessFailed, no Python starts: the test checks where the step was sent);
the hook's tests use one that execs this interpreter, so the step runs there to its end."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_paimon.job_env import NoJobEnvironment
from airflow_paimon.job_env.step import StepError

SOURCES = ("argument", "connection", "config")
STEP = "-m airflow_paimon.job_env.step"  # how a step starts in the job environment (job_env/step.py)


@dataclass
class Interpreter:
    path: str
    marker: Path

    def calls(self) -> list[str]:
        return self.marker.read_text().splitlines() if self.marker.exists() else []

    def ran_a_step(self) -> bool:
        return any(STEP in line for line in self.calls())


def make_interpreter(directory: Path, name: str, real: bool = False) -> Interpreter:
    """An executable that records each start in a marker file; ``real``: then runs as this interpreter."""
    marker, script = directory / f"{name}.calls", directory / name
    tail = f'exec {sys.executable} "$@"' if real else "exit 3"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{marker}"\n{tail}\n')
    script.chmod(0o755)
    return Interpreter(str(script), marker)


@pytest.fixture(autouse=True)
def nothing_configured(monkeypatch):
    for name in ("AIRFLOW__PAIMON__JOB_PYTHON", "AIRFLOW__PAIMON__JOB_ARCHIVE", "AIRFLOW_CONN_SPARK_DEFAULT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def warehouse(tmp_path, monkeypatch) -> str:
    path = str(tmp_path / "wh")
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon",
                                                                  "extra": {"warehouse": path}}))
    return path


@pytest.fixture
def given(monkeypatch):
    """give(source, python, conn_type): job_python set by ``source``; the Spark connection ``spark_default`` of
    ``conn_type`` (None: no such connection unless the source is it). Returns the operator's kwargs."""

    def give(source: str, python: str, conn_type: str | None = "spark") -> dict:
        extra = {"job_python": python} if source == "connection" else {}
        if conn_type is not None or extra:
            conn = {"conn_type": conn_type or "spark", "host": "local[1]", "extra": extra}
            if conn_type == "spark_connect":
                conn = {**conn, "host": "localhost", "port": 15002}
            monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
        if source == "config":
            monkeypatch.setenv("AIRFLOW__PAIMON__JOB_PYTHON", python)
        return {"job_python": python} if source == "argument" else {}

    return give


def task_context() -> dict:
    ti = SimpleNamespace(dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)
    return {"ti": ti, "dag_run": SimpleNamespace(dag_id="d", run_id="r", clear_number=0),
            "data_interval_end": None, "logical_date": None}


def lifecycle_operators(kwargs: dict) -> dict:
    from airflow_paimon.operators.lifecycle import (PaimonAlterTableOperator, PaimonCreateTableOperator,
                                                    PaimonCreateTagOperator, PaimonExpirePartitionsOperator,
                                                    PaimonRollbackOperator)

    schema = {"columns": [["id", "BIGINT"]], "primary_keys": ["id"], "options": {"bucket": "1"}}
    return {
        "create": PaimonCreateTableOperator(task_id="create", table="db.t", table_schema=schema, **kwargs),
        "alter": PaimonAlterTableOperator(task_id="alter", table="db.t", set_options={"a": "b"}, **kwargs),
        "tag": PaimonCreateTagOperator(task_id="tag", table="db.t", tag="x", snapshot_id=1, **kwargs),
        "rollback": PaimonRollbackOperator(task_id="rollback", table="db.t", to_snapshot=1, **kwargs),
        "expire_partitions": PaimonExpirePartitionsOperator(task_id="expire", table="db.t", **kwargs),
    }


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", ["create", "alter", "tag", "rollback", "expire_partitions"])
def test_each_lifecycle_operator_runs_its_step_in_the_given_interpreter(name, source, given, warehouse, tmp_path):
    from airflow_paimon.hooks.paimon import PaimonHook

    python = make_interpreter(tmp_path, "job-python")
    # no spark_default connection unless it is the source: a lifecycle task needs none
    operator = lifecycle_operators(given(source, python.path, conn_type=None))[name]
    with pytest.raises(StepError, match="ProcessFailed.*job-python left no result; it exited 3"):
        operator.run(task_context(), PaimonHook())
    assert python.ran_a_step(), f"{name}: its step did not start in {python.path}"


@pytest.mark.parametrize("source", SOURCES)
def test_bootstrap_and_compact_decide_in_the_given_interpreter(source, given, warehouse, tmp_path):
    from airflow_paimon.operators.compact import PaimonCompactOperator
    from airflow_paimon.operators.paimon import PaimonBootstrapIndexOperator

    python = make_interpreter(tmp_path, "job-python")
    kwargs = given(source, python.path)
    for operator in (PaimonBootstrapIndexOperator(task_id="b", table="db.t", **kwargs),
                     PaimonCompactOperator(task_id="c", table="db.t", **kwargs)):
        before = len(python.calls())
        assert operator.decide_from_metadata({}) is None  # the step failed (retryable): the job decides
        assert len(python.calls()) == before + 1 and python.ran_a_step(), type(operator).__name__


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("operator_name", ["write", "commit", "expire_snapshots", "remove_orphans", "incremental"])
def test_spark_submit_drives_with_the_given_interpreter(operator_name, source, given, warehouse, tmp_path,
                                                        monkeypatch):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_paimon.operators.incremental import PaimonIncrementalReadOperator
    from airflow_paimon.operators.maintenance import PaimonExpireSnapshotsOperator, PaimonRemoveOrphanFilesOperator
    from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator, PaimonCommitOperator

    python = make_interpreter(tmp_path, "job-python")
    kwargs = {"task_id": "t", "table": "db.t", **given(source, python.path)}
    operator = {"write": lambda: PaimonAssignAndWriteOperator(source="/x.parquet", **kwargs),
                "commit": lambda: PaimonCommitOperator(**kwargs),
                "expire_snapshots": lambda: PaimonExpireSnapshotsOperator(**kwargs),
                "remove_orphans": lambda: PaimonRemoveOrphanFilesOperator(**kwargs),
                "incremental": lambda: PaimonIncrementalReadOperator(start_snapshot_id=1, target="/out", **kwargs),
                }[operator_name]()
    submitted: dict = {}
    monkeypatch.setattr(SparkSubmitHook, "submit", lambda self, application, **kw: submitted.update(self._conf))
    monkeypatch.setattr("airflow_paimon.spark.submit.with_driver_archive", lambda *args: None)
    operator._submit({}, str(tmp_path / "result.json"))
    assert submitted["spark.pyspark.driver.python"] == python.path
    assert submitted["spark.pyspark.python"] == python.path  # a local master: its workers too


@pytest.mark.parametrize("source", SOURCES)
def test_the_spark_connect_client_runs_in_the_given_interpreter(source, given, warehouse, tmp_path):
    from airflow_paimon.operators.paimon import PaimonCommitOperator

    python = make_interpreter(tmp_path, "job-python")
    operator = PaimonCommitOperator(task_id="t", table="db.t", **given(source, python.path, "spark_connect"))
    with pytest.raises(StepError, match="connect_job: ProcessFailed"):
        operator._submit({}, str(tmp_path / "result.json"))
    assert python.ran_a_step()


@pytest.mark.parametrize("source", ["connection", "config"])
def test_hook_test_connection_runs_in_the_given_interpreter(source, given, warehouse, tmp_path):
    """The hook names no Spark connection: spark_default's extra, else [paimon] job_python."""
    from airflow_paimon.hooks.paimon import PaimonHook

    python = make_interpreter(tmp_path, "job-python", real=True)
    given(source, python.path, conn_type=None)
    Path(warehouse).mkdir()
    ok, message = PaimonHook().test_connection()
    assert ok, message  # the step ran there to its end (~3-5 s: the job side's imports)
    assert python.ran_a_step()


@pytest.mark.parametrize("source", ["connection", "config"])
def test_the_ui_pages_read_in_the_given_interpreter(source, given, warehouse, tmp_path, monkeypatch):
    from starlette.requests import Request

    from airflow_paimon.hooks.paimon import PaimonHook
    from airflow_paimon.ui import app

    python = make_interpreter(tmp_path, "job-python")
    given(source, python.path, conn_type=None)
    monkeypatch.setattr(app, "paimon_hooks", lambda: {"paimon_default": PaimonHook()})
    monkeypatch.setattr(app, "recent_runs", lambda: [])
    app.READS.clear()  # the overview keeps a connection's result a while: another test's must not answer here
    html = app.overview(Request({"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": b""}))
    assert len(python.calls()) == 1 and python.ran_a_step()  # the overview's table summaries
    assert "table_summaries: ProcessFailed" in html
    response = app.table("paimon_default", "db.t")  # the failed read is the page's answer, not a 500
    assert response.status_code == 200 and "table_page: ProcessFailed" in response.body.decode()
    assert len(python.calls()) == 2
    app.READS.clear()


@pytest.mark.parametrize("source", SOURCES)
def test_the_warm_up_cli_warms_the_given_interpreter(source, given, tmp_path, monkeypatch):
    from airflow_paimon.spark import warm_up

    python = make_interpreter(tmp_path, "job-python")
    kwargs = given(source, python.path, conn_type=None)
    warmed: list = []
    monkeypatch.setattr(warm_up, "warm_up", lambda driver_only, conf, env: warmed.append(conf) or True)
    argv = ["--jobs", "compact"] + (["--python", kwargs["job_python"]] if kwargs else [])
    assert warm_up.main(argv) == 0
    assert [(c["spark.pyspark.driver.python"], c["spark.pyspark.python"]) for c in warmed] == [(python.path,) * 2]


def test_the_operator_argument_beats_the_connection_which_beats_the_config(given, warehouse, tmp_path):
    from airflow_paimon.hooks.paimon import PaimonHook
    from airflow_paimon.job_env import resolve_job_env

    argument, connection, config = (make_interpreter(tmp_path, name) for name in ("argument", "conn", "config"))
    given("connection", connection.path)
    given("config", config.path, conn_type=None)  # keeps the connection
    operators = lifecycle_operators({"job_python": argument.path})
    assert operators["create"].job_env().python == argument.path
    with pytest.raises(StepError):
        operators["create"].run(task_context(), PaimonHook())
    assert argument.ran_a_step() and not connection.calls() and not config.calls()

    assert lifecycle_operators({})["create"].job_env().python == connection.path
    assert resolve_job_env(None, "spark_default").source == "Spark connection 'spark_default' extra job_python"
    assert resolve_job_env(None, "no_such_connection").python == config.path  # a missing connection: no extra
    assert resolve_job_env(None, None).source == "[paimon] job_python"


def test_a_templated_argument_is_rendered_and_empty_means_not_given(given, tmp_path):
    from airflow_paimon.operators.lifecycle import PaimonCreateTableOperator

    config = make_interpreter(tmp_path, "config")
    given("config", config.path, conn_type=None)
    operator = PaimonCreateTableOperator(task_id="c", table="db.t", table_schema={}, job_python="{{ params.py }}")
    assert "job_python" in operator.template_fields
    operator.render_template_fields({"params": {"py": ""}})
    assert operator.job_env().python == config.path


@pytest.mark.parametrize("source,named", [("argument", "the operator's argument job_python"),
                                          ("connection", "Spark connection 'spark_default' extra job_python"),
                                          ("config", r"\[paimon\] job_python")])
def test_a_bad_setting_is_refused_naming_where_it_was_set_and_its_path(source, named, given):
    kwargs = given(source, "/nowhere/bin/python", conn_type=None)
    operator = lifecycle_operators(kwargs)["create"]
    with pytest.raises(NoJobEnvironment, match=f"job_python '/nowhere/bin/python' .set by {named}. is not an exec"):
        operator.job_env()


def test_paimon_upsert_gives_its_job_python_to_every_task():
    import pendulum
    from airflow.sdk import DAG

    from airflow_paimon.task_group import paimon_upsert

    with DAG("d", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        group = paimon_upsert(table="db.t", source="/in.parquet", job_python="/opt/jobs/bin/python")
    assert {task.task_id: task.job_python for task in group} == {
        f"db_t.{name}": "/opt/jobs/bin/python" for name in ("bootstrap_index", "assign_and_write", "commit", "compact")}
