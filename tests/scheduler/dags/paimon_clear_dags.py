"""The DAG the scheduler tests run on a real scheduler: the write's three tasks into a cross-partition table
(primary key ``id``, partitioned by ``dt``), the source a run param (a parquet file the test corrects and then
clears the run). A run whose ``fail_commit`` param names an existing file fails its commit task (the tests
remove the file, then clear that task alone). ``scheduler_clear_sum`` and ``scheduler_clear_sum_never``: the same
into an aggregation table (``v`` summed), with ``reprocess_on_clear`` "upsert" (the default: a Clear is refused)
and "never" (a Clear writes nothing)."""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowFailException

from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}}
SUMS = {"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "options": {"bucket": "2", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}}

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


for dag_id, reprocess in (("scheduler_clear_sum", "upsert"), ("scheduler_clear_sum_never", "never")):
    with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             params={"table": "db.sums", "source": ""}, default_args={"retries": 0}) as sums:
        (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}", table_schema=SUMS,
                                      shards=2)
         >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                         source="{{ params.source }}", reprocess_on_clear=reprocess)
         >> PaimonCommitOperator(task_id="commit", table="{{ params.table }}"))
    globals()[dag_id] = sums
