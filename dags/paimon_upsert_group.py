"""Two tables upserted in one DAG, each by a ``paimon_upsert`` TaskGroup, committed together.

Each run reads the day's change files ``{source_root}/orders/{{ ds }}.parquet`` (into ``shop.orders``, a
cross-partition table) and ``{source_root}/customers/{{ ds }}.parquet`` (into ``shop.customers``, two fixed
buckets). Neither table commits before both batches are validated and written: each group's commit also
waits for the other group's assign-and-write (staged files are invisible until their commit).

That is why the groups wire their tasks with XComArgs: ``shop_orders.commit`` has two assign-and-write tasks
upstream, one per table; it commits the one it was given (``write.output``), not whichever a walk of the
graph meets first. Each table is compacted every ``COMPACT_EVERY_N_RUNS`` runs (the compact task is skipped
in between). Connections: ``paimon_default``, ``spark_default``; the Airflow Variable
``paimon_source_root`` says where the change files land.
"""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.task_group import paimon_upsert

SOURCE_ROOT = "{{ var.value.get('paimon_source_root', '/tmp/paimon-sources') }}"
ORDERS, CUSTOMERS = "shop.orders", "shop.customers"
COMPACT_EVERY_N_RUNS = 7
ORDERS_SCHEMA = {
    "columns": [["order_id", "BIGINT"], ["dt", "DATE"], ["customer", "STRING"], ["amount", "DOUBLE"],
                ["status", "STRING"]],
    "primary_keys": ["order_id"],
    "partition_keys": ["dt"],
    "options": {"bucket": "-1"},
}
CUSTOMERS_SCHEMA = {
    "columns": [["customer", "STRING"], ["name", "STRING"], ["city", "STRING"]],
    "primary_keys": ["customer"],
    "options": {"bucket": "2"},
}

with DAG(
    dag_id="paimon_upsert_group",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # runs of one table commit in order
    default_args={"retries": 2, "retry_delay": pendulum.duration(seconds=30)},
    tags=["paimon", "example"],
    doc_md=__doc__,
) as dag:
    compaction = {"every_n_runs": COMPACT_EVERY_N_RUNS}
    orders = paimon_upsert(table=ORDERS, table_schema=ORDERS_SCHEMA, compact_kwargs=compaction,
                           source=f"{SOURCE_ROOT}/orders/{{{{ ds }}}}.parquet")
    customers = paimon_upsert(table=CUSTOMERS, table_schema=CUSTOMERS_SCHEMA, compact_kwargs=compaction,
                              source=f"{SOURCE_ROOT}/customers/{{{{ ds }}}}.parquet")
    for group, other in ((orders, customers), (customers, orders)):
        other.get_child_by_label("assign_and_write") >> group.get_child_by_label("commit")
