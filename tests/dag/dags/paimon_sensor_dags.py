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
