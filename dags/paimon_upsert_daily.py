"""Daily upsert into a cross-partition Paimon table (primary key ``order_id``, partitioned by ``dt``).

Each run reads the day's change file ``{source_root}/orders/{{ ds }}.parquet`` — rows whose ``dt`` may
differ from the partition the key lives in today; such keys move. Connections used: ``paimon_default``
(the warehouse) and ``spark_default`` (e.g. host ``local[2]``). Set the Airflow Variable
``paimon_source_root`` to where the change files land.

The run ends with compaction (Paimon's universal compaction of the buckets written since the last one);
set ``COMPACT_EVERY_N_RUNS`` to compact only after every Nth write (the compact task is skipped otherwise).
"""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

TABLE = "demo.orders"
TABLE_SCHEMA = {
    "columns": [["order_id", "BIGINT"], ["dt", "DATE"], ["customer", "STRING"], ["amount", "DOUBLE"],
                ["status", "STRING"]],
    "primary_keys": ["order_id"],
    "partition_keys": ["dt"],
    "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "200000"},
}
COMPACT_EVERY_N_RUNS = 1

with DAG(
    dag_id="paimon_upsert_daily",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # runs of one table commit in order
    default_args={"retries": 2, "retry_delay": pendulum.duration(seconds=30)},
    tags=["paimon", "example"],
    doc_md=__doc__,
) as dag:
    bootstrap = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table=TABLE, table_schema=TABLE_SCHEMA)
    write = PaimonAssignAndWriteOperator(
        task_id="assign_and_write", table=TABLE,
        source="{{ var.value.get('paimon_source_root', '/tmp/paimon-sources') }}/orders/{{ ds }}.parquet")
    commit = PaimonCommitOperator(task_id="commit", table=TABLE)
    compact = PaimonCompactOperator(task_id="compact", table=TABLE, every_n_runs=COMPACT_EVERY_N_RUNS)
    bootstrap >> write >> commit >> compact
