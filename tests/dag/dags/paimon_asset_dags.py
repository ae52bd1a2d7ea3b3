"""Test DAG (copied into the test session's DAG folder): a standalone compaction of a literal table, so its
outlet is the table's paimon:// asset."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.compact import PaimonCompactOperator

with DAG("test_asset_compact", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         default_args={"retries": 0}) as compact_dag:
    PaimonCompactOperator(task_id="compact", table="db.t", full=True, scope="table")
