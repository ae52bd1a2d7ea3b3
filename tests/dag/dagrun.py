"""Run a DAG with dag.test() against a fresh warehouse and collect what its tasks returned."""
from __future__ import annotations

import glob
import json
import os

import pendulum


def use_warehouse(monkeypatch, warehouse: str) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT",
                       json.dumps({"conn_type": "paimon", "extra": {"warehouse": warehouse}}))


def run_dag(dag, logical_date: str | None = None, conf: dict | None = None):
    """(dag run state, {task_id: state}, {task_id: xcom}) of one dag.test() run."""
    kwargs = {"run_conf": conf} if conf else {}
    if logical_date:
        kwargs["logical_date"] = pendulum.parse(logical_date)
    run = dag.test(**kwargs)
    tis = run.get_task_instances()
    states = {ti.task_id: ti.state for ti in tis}
    xcoms = {ti.task_id: ti.xcom_pull(task_ids=ti.task_id) for ti in tis if ti.state == "success"}
    return run, states, xcoms


def job_errors(warehouse: str, dag_id: str) -> list[str]:
    """The errors the DAG's Spark jobs reported in their result files."""
    return [doc["error"] for doc in job_failures(warehouse, dag_id)]


def job_failures(warehouse: str, dag_id: str) -> list[dict]:
    """The result files of the DAG's Spark jobs that failed (``{"error", "retryable"}``), by task and try."""
    from airflow_paimon.engine.files import layout

    out = []
    for path in sorted(glob.glob(os.path.join(layout.default_root(warehouse, "results"), dag_id, "*", "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        if "error" in doc:
            out.append(doc)
    return out
