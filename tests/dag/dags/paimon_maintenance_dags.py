"""Test DAGs (copied into the test session's DAG folder): a nightly maintenance DAG of only compaction, expiry
and orphan removal (no write, no upstream commit), and a mis-wired DAG whose commit chains after another
table's assign-and-write."""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.maintenance import PaimonExpireSnapshotsOperator, PaimonRemoveOrphanFilesOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

ARGS = {"start_date": pendulum.datetime(2026, 1, 1, tz="UTC"), "schedule": None,
        "default_args": {"retries": 0}}

with DAG("test_maintenance", params={"table": "db.t"}, **ARGS) as maintenance:
    table = "{{ params.table }}"
    (PaimonCompactOperator(task_id="compact", table=table, full=True, scope="table")
     >> PaimonExpireSnapshotsOperator(task_id="expire_snapshots", table=table, retain_min=1, time_retained="0 ms")
     >> PaimonRemoveOrphanFilesOperator(task_id="remove_orphan_files", table=table, older_than=timedelta(hours=1)))

with DAG("test_miswired", params={"source": ""}, **ARGS) as miswired:
    (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="db.t", shards=2)
     >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="db.t", source="{{ params.source }}")
     >> PaimonCommitOperator(task_id="commit", table="db.other"))
