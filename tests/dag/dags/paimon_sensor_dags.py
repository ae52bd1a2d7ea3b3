"""DAGs of the snapshot-sensor tests: one sensor, poke or deferrable, table and start id as run params."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.sensors.paimon import PaimonSnapshotSensor


def sensor_dag(dag_id: str, deferrable: bool) -> DAG:
    with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             params={"table": "db.s", "after": None, "kinds": None}, default_args={"retries": 0}) as dag:
        PaimonSnapshotSensor(task_id="wait", table="{{ params.table }}", after_snapshot_id="{{ params.after }}",
                             deferrable=deferrable, poke_interval=0.5, timeout=120)
    return dag


poke = sensor_dag("test_snapshot_sensor_poke", deferrable=False)
deferred = sensor_dag("test_snapshot_sensor_deferred", deferrable=True)


def follow_dag(dag_id: str) -> DAG:
    """FLIP-27-style follower: wait for a snapshot of ``source_table`` newer than ``after``, read the change since
    ``after`` as parquet, apply it (with row kinds) to ``mirror``."""
    from airflow_paimon.operators.incremental import PaimonIncrementalReadOperator
    from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                                 PaimonCommitOperator)

    mirror_schema = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"], ["s", "STRING"]],
                     "primary_keys": ["dt", "id"], "partition_keys": ["dt"], "options": {"bucket": "2"}}
    with DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             params={"table": "db.src", "mirror": "db.mirror", "after": 0, "target": ""},
             default_args={"retries": 0}) as dag:
        wait = PaimonSnapshotSensor(task_id="wait", table="{{ params.table }}", after_snapshot_id="{{ params.after }}",
                                    deferrable=True, poke_interval=0.5, timeout=120)
        read = PaimonIncrementalReadOperator(
            task_id="read_changes", table="{{ params.table }}", target="{{ params.target }}",
            start_snapshot_id="{{ ti.xcom_pull(task_ids='wait')['after_snapshot'] | tojson }}",
            end_snapshot_id="{{ ti.xcom_pull(task_ids='wait')['snapshot_id'] }}")
        bootstrap = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.mirror }}",
                                                 table_schema=mirror_schema, shards=2)
        write = PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.mirror }}",
                                             source="{{ params.target }}", row_kind_column="row_kind")
        wait >> read >> bootstrap >> write >> PaimonCommitOperator(task_id="commit", table="{{ params.mirror }}")
    return dag


follow = follow_dag("test_incremental_follow")
