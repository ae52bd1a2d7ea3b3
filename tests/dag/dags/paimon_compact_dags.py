"""The compaction test DAG (copied into the test session's DAG folder): write → commit → full compaction →
snapshot expiry → orphan removal, plus a compaction that is only due every 100th write (it skips)."""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.maintenance import PaimonExpireSnapshotsOperator, PaimonRemoveOrphanFilesOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

with DAG("test_compact", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         params={"table": "db.t", "source": ""}, default_args={"retries": 0}) as compact_dag:
    table = "{{ params.table }}"
    commit = (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table=table, shards=2)
              >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table=table, source="{{ params.source }}")
              >> PaimonCommitOperator(task_id="commit", table=table))
    commit >> PaimonCompactOperator(task_id="compact_rarely", table=table, every_n_runs=100)
    (commit
     >> PaimonCompactOperator(task_id="compact", table=table, full=True, scope="table")
     >> PaimonExpireSnapshotsOperator(task_id="expire_snapshots", table=table, retain_min=2, time_retained="0 ms")
     >> PaimonRemoveOrphanFilesOperator(task_id="remove_orphan_files", table=table, older_than=timedelta(hours=1)))
