"""Operators without an upstream (a nightly maintenance DAG) and upstream results of another table, through
dag.test() (jobs on Spark Connect); read back with pypaimon and pypaimon-rust against the pandas oracle."""
from __future__ import annotations

import pytest

from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.table.table import get_table
from compaction_tables import assert_reads, batches, bucket_files, cross_partition_table
from dag.dagrun import run_dag, use_warehouse

pytestmark = [pytest.mark.dag, pytest.mark.usefixtures("on_spark_connect")]


def test_maintenance_dag_without_a_write_compacts_the_latest_snapshot(airflow_home, warehouse, monkeypatch):
    use_warehouse(monkeypatch, warehouse)
    table, expected = cross_partition_table(warehouse, batches(4, seed=31))  # snapshots 1-4, level-0 files
    from paimon_maintenance_dags import maintenance

    run, states, xcoms = run_dag(maintenance)
    assert run.state == "success", states
    compact = xcoms["compact"]
    assert compact["table"] == "db.t" and compact["snapshot_id"] == 5 and compact["compacted_buckets"] > 0
    table = get_table({"warehouse": warehouse}, "db.t")
    assert latest_snapshot(table).commit_kind == "COMPACT"
    for where, entries in bucket_files(table).items():  # full compaction: one sorted run per bucket
        assert {e.file.level for e in entries} == {5}, where
    assert xcoms["expire_snapshots"]["expired_snapshots"] == 4
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [5]
    assert xcoms["remove_orphan_files"]["orphan_files"] == 0
    assert_reads(table, warehouse, expected, ["id"])


def test_an_upstream_result_of_another_table_is_refused(airflow_home, warehouse, monkeypatch, tmp_path, capfd,
                                                       caplog):
    use_warehouse(monkeypatch, warehouse)
    data = batches(1, seed=32)
    cross_partition_table(warehouse, data)
    source = tmp_path / "batch.parquet"
    batches(1, seed=33)[0].to_parquet(source, index=False)
    from paimon_maintenance_dags import miswired

    run, states, _ = run_dag(miswired, conf={"source": str(source)})
    assert run.state == "failed" and states["commit"] == "failed", states
    assert run.get_task_instance("commit").try_number == 1  # not retried: a retry cannot fix the wiring
    out, err = capfd.readouterr()
    assert "writes table db.other but its upstream assign_and_write is for table db.t" in out + err + caplog.text
    table = get_table({"warehouse": warehouse}, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]  # nothing committed
