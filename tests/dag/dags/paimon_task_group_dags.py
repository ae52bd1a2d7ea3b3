"""Test DAG (copied into the test session's DAG folder): XComArg wiring gone wrong. ``assign_and_write`` of
db.a is given the output of db.b's bootstrap; ``commit`` of db.a has no upstream at all."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

SCHEMA = {"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"], "options": {"bucket": "1"}}

with DAG("test_wrong_upstream_output", params={"source": ""}, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         schedule=None, default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=0)}) as wrong_upstream:
    other = PaimonBootstrapIndexOperator(task_id="bootstrap_b", table="db.b", table_schema=SCHEMA, shards=1)
    PaimonAssignAndWriteOperator(task_id="assign_and_write_a", table="db.a", source="{{ params.source }}",
                                 upstream_output=other.output)
    PaimonCommitOperator(task_id="commit_a", table="db.a")
