"""End to end: a write followed by full compaction, snapshot expiry and orphan removal, all as Spark jobs
through dag.test(); read back with pypaimon and pypaimon-rust against the pandas oracle."""
from __future__ import annotations

import pytest

from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.table.table import get_table
from compaction_tables import assert_reads, batches, bucket_files, cross_partition_table
from dag.dagrun import run_dag, use_warehouse
from oracle import expected_upsert

pytestmark = pytest.mark.dag


def test_write_then_compact_expire_and_clean(airflow_home, warehouse, monkeypatch, tmp_path):
    use_warehouse(monkeypatch, warehouse)
    seeded = batches(5, seed=21)
    cross_partition_table(warehouse, seeded)  # five snapshots of level-0 files, quickly, in-process
    last = batches(1, seed=22)[0]
    source = tmp_path / "last.parquet"
    last.to_parquet(source, index=False)
    from paimon_compact_dags import compact_dag

    run, states, xcoms = run_dag(compact_dag, conf={"source": str(source)})
    assert run.state == "success", states
    assert states["compact_rarely"] == "skipped"
    commit, compact = xcoms["commit"], xcoms["compact"]
    assert commit["snapshot_id"] == 6
    assert set(compact) >= {"table", "snapshot_id", "compacted_buckets", "files_before", "files_after"}
    assert compact["snapshot_id"] == 7 and compact["compacted_buckets"] > 0
    assert compact["files_before"] > compact["files_after"] > 0

    table = get_table({"warehouse": warehouse}, "db.t")
    assert latest_snapshot(table).commit_kind == "COMPACT"
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [6, 7]
    assert xcoms["expire_snapshots"]["expired_snapshots"] == 5
    for where, entries in bucket_files(table).items():  # each bucket one sorted run at the max level
        assert {e.file.level for e in entries} == {5}, where
    # every file is younger than the one-hour floor: nothing judged, but listing and snapshots agree on paths
    assert xcoms["remove_orphan_files"]["orphan_files"] == 0
    assert_reads(table, warehouse, expected_upsert(seeded + [last], "id"), ["id"])
