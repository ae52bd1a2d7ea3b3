"""Test DAGs (copied into the test session's DAG folder), each one task with a retry: an expiry in Spark Connect
mode (its job runs in the task process, so a test can make it raise any error), one under spark-submit with a
spec key this version's job does not know (an operator of another version wrote it: SpecError in the driver),
and a create-table (no job: its work runs in the task itself)."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.lifecycle import PaimonCreateTableOperator
from airflow_paimon.operators.maintenance import PaimonExpireSnapshotsOperator

ARGS = {"start_date": pendulum.datetime(2026, 1, 1, tz="UTC"), "schedule": None,
        "default_args": {"retries": 1, "retry_delay": pendulum.duration(seconds=0)}}
CONNECT_CONN_ID = "spark_connect_retry"  # the test sets it: a spark_connect connection, no server needed


class NewerSpecExpireOperator(PaimonExpireSnapshotsOperator):
    """Sends its job one key more than the job's spec has."""

    def _submit(self, spec: dict, result_uri: str, context=None) -> None:
        super()._submit({**spec, "from_a_newer_operator": True}, result_uri, context)


with DAG("test_retry_connect", **ARGS) as retry_connect:
    PaimonExpireSnapshotsOperator(task_id="expire", table="db.t", spark_conn_id=CONNECT_CONN_ID)

with DAG("test_retry_submit", **ARGS) as retry_submit:
    NewerSpecExpireOperator(task_id="expire", table="db.t")

with DAG("test_retry_in_process", **ARGS) as retry_in_process:
    PaimonCreateTableOperator(task_id="create", table="db.t", table_schema={
        "columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"], "options": {"bucket": "1"}})
