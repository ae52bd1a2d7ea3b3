"""Daily upsert of a customer feed whose upstream adds columns (primary key ``customer_id``, 4 fixed buckets).

Each run reads ``{source_root}/customers/{{ ds }}.parquet``. The day the feed gains a column, the run adds it to
the table as a nullable column at the end (``schema_evolution="add_columns"``: a new Paimon schema, made once
per DAG run, before anything is staged) and writes on; rows written before read the new column as null.
Dropped, renamed or narrowed columns are still refused by name. Connections: ``paimon_default`` and
``spark_default``; the Airflow Variable ``paimon_source_root`` says where the feed lands.
"""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.task_group import paimon_upsert

TABLE = "demo.customers"
TABLE_SCHEMA = {
    "columns": [["customer_id", "BIGINT"], ["name", "STRING"], ["country", "STRING"], ["score", "DOUBLE"]],
    "primary_keys": ["customer_id"],
    "options": {"bucket": "4"},
}

with DAG(
    dag_id="paimon_customers_evolving",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": pendulum.duration(seconds=30)},
    tags=["paimon", "example"],
    doc_md=__doc__,
) as dag:
    paimon_upsert(
        "customers", table=TABLE, table_schema=TABLE_SCHEMA, schema_evolution="add_columns",
        source="{{ var.value.get('paimon_source_root', '/tmp/paimon-sources') }}/customers/{{ ds }}.parquet")
