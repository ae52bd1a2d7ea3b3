"""The DAG the scheduler tests run on a real scheduler: the write's three tasks into a cross-partition table
(primary key ``id``, partitioned by ``dt``), the source a run param (a parquet file the test corrects and then
clears the run). A run whose ``fail_commit`` param names an existing file fails its commit task (the tests
remove the file, then clear that task alone)."""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowFailException

from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}}



def fail_while_marked(context) -> None:
    marker = context["params"].get("fail_commit")
    if marker and os.path.exists(marker):
        raise AirflowFailException(f"commit refused while {marker} exists (test)")


with DAG("scheduler_clear", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         params={"table": "db.t", "source": "", "fail_commit": ""}, default_args={"retries": 0}) as dag:
    bootstrap = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}",
                                             table_schema=SPEC, shards=2)
    write = PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                         source="{{ params.source }}")
    commit = PaimonCommitOperator(task_id="commit", table="{{ params.table }}", pre_execute=fail_while_marked)
    bootstrap >> write >> commit
