"""Manual backfill: trigger with params ``source_path`` (parquet / CSV / JSON file or directory) and
``table``; upserts that source into the table exactly once per run (``write_mode`` "overwrite": the
partitions present in the source are replaced by it instead, one OVERWRITE snapshot), then compacts:
``compact_full`` true rewrites every bucket written since the last compaction into one sorted run at the max
level; false lets Paimon's universal compaction decide; ``compact_every_n_runs`` N > 1 compacts only after
every Nth write."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Param

from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

with DAG(
    dag_id="paimon_backfill",
    schedule=None,
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    params={
        "source_path": Param(type="string", description="file or directory to upsert"),
        "table": Param("demo.orders", type="string", description="database.table"),
        "source_format": Param(None, type=["null", "string"], enum=[None, "parquet", "csv", "json"]),
        "write_mode": Param("upsert", type="string", enum=["upsert", "overwrite"],
                            description="overwrite: replace the partitions present in the source"),
        "compact_full": Param(False, type="boolean", description="full compaction instead of universal"),
        "compact_every_n_runs": Param(1, type="integer", minimum=1, description="compact after every Nth write"),
    },
    default_args={"retries": 2, "retry_delay": pendulum.duration(seconds=30)},
    tags=["paimon", "example"],
    doc_md=__doc__,
) as dag:
    bootstrap = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}")
    write = PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                         source="{{ params.source_path }}",
                                         source_format="{{ params.source_format or '' }}",
                                         write_mode="{{ params.write_mode }}")
    commit = PaimonCommitOperator(task_id="commit", table="{{ params.table }}")
    compact = PaimonCompactOperator(task_id="compact", table="{{ params.table }}",
                                    full="{{ params.compact_full }}", every_n_runs="{{ params.compact_every_n_runs }}")
    bootstrap >> write >> commit >> compact
