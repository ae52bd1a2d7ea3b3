"""DAGs the tests run (copied into the test session's DAG folder with the shipped ones): the three
operators chained, table and source given as run params."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)
from airflow_paimon.task_group import paimon_upsert

SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}}


def write_dag(dag_id: str, commits: int = 1, table_schema: dict | None = None) -> DAG:
    with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             params={"table": "db.t", "source": ""}, default_args={"retries": 0}) as dag:
        chain = [PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}",
                                              table_schema=table_schema, shards=2),
                 PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                              source="{{ params.source }}")]
        chain += [PaimonCommitOperator(task_id=f"commit{i or ''}", table="{{ params.table }}") for i in range(commits)]
        for upstream, downstream in zip(chain, chain[1:]):
            upstream >> downstream
    return dag


commit_twice = write_dag("test_commit_twice", commits=2, table_schema=SPEC)
seed = write_dag("test_seed", table_schema=SPEC)
bad_input = write_dag("test_bad_input")
write = write_dag("test_write")  # any existing table (params.table) from any source (params.source)


# The day the upstream adds a column: the group adds it to the table (and compacts across both schemas)
with DAG("test_schema_evolution", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         params={"source": ""}, default_args={"retries": 0}) as schema_evolution:
    paimon_upsert("upsert", table="db.t", source="{{ params.source }}", table_schema=SPEC,
                  schema_evolution="add_columns", bootstrap_kwargs={"shards": 2}, compact_kwargs={"full": True})
