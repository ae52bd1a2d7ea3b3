"""Orphan removal never deletes what a commit in flight is about to reference, and it sees the same paths
on every spelling of a local warehouse (plain, file:/, file:///)."""
from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest

from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.commit.snapshot_commit import ExclusiveSnapshotCommit
from airflow_paimon.engine.errors import PaimonJobError, ValidationError
from airflow_paimon.engine.maintenance.orphans import _check_paths_line_up, remove_orphan_files
from airflow_paimon.engine.maintenance.references import References, SnapshotReader, normalize
from airflow_paimon.engine.jobs.specs import OrphansSpec
from airflow_paimon.engine.table.table import get_or_create_table, get_table
from airflow_paimon.operators.maintenance import PaimonRemoveOrphanFilesOperator
from airflow_paimon.spark.remove_orphan_files import run_remove_orphan_files
from compaction_tables import assert_reads, batches, cross_partition_table
from file_age import age
from local_runner import bootstrap, compact, stage_run, upsert
from oracle import assert_table_equals, expected_upsert
from orphan_tables import FIRST, SECOND, SPEC, arrow


def now_ms() -> int:
    return int(time.time() * 1000)


def stray_files(table_path: str) -> list[str]:
    """A data file of a write that never committed and a manifest of a commit that crashed, both old."""
    root = table_path.removeprefix("file://")
    strays = [os.path.join(root, "dt=a", "bucket-0", "data-never-committed-0.parquet"),
              os.path.join(root, "manifest", "manifest-crashed-commit-0")]
    for path in strays:
        with open(path, "wb") as f:
            f.write(b"PAR1")
        age(path)
    return strays


def pause_before_snapshot(monkeypatch, during):
    """Run ``during(snapshot)`` inside the commit: its manifests and manifest lists are written, its snapshot
    file not yet (pypaimon writes them first, then hands the snapshot to the snapshot commit)."""
    real = ExclusiveSnapshotCommit.commit

    def commit(self, base_snapshot_uuid, snapshot, statistics):
        during(snapshot)
        return real(self, base_snapshot_uuid, snapshot, statistics)

    monkeypatch.setattr(ExclusiveSnapshotCommit, "commit", commit)


def test_orphan_removal_during_a_commit_keeps_the_commits_new_files(warehouse, monkeypatch):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(FIRST), run_id="first")
    spec = stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(SECOND), run_id="second")
    table = get_table(opts, "db.t")
    age(table.table_path)  # everything committed so far is old; only the commit in flight writes new files
    strays = stray_files(table.table_path)
    manifest_dir = table.path_factory().manifest_path().removeprefix("file://")
    seen = []

    def remove_orphans(snapshot):  # records, asserts nothing: pypaimon would take an exception for a retry
        lists = [f"{manifest_dir}/{name}" for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list)]
        latest = get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id
        written = all(os.path.exists(p) for p in lists)
        # the zero margin a user asked for (older_than=timedelta(0)): cut-off now
        result = remove_orphan_files(get_table(opts, "db.t"), now_ms(), staging_root=f"{warehouse}/staging")
        seen.append((snapshot.id, latest, written, result, all(os.path.exists(p) for p in lists)))

    pause_before_snapshot(monkeypatch, remove_orphans)
    assert run_commit(spec).snapshot_id == 2
    assert len(seen) == 1
    snapshot_id, latest, written, result, kept = seen[0]
    assert (snapshot_id, latest, written) == (2, 1, True)  # in flight: manifest lists written, no snapshot 2 yet
    assert kept and result.orphan_files == 2  # the commit's files stayed; the old strays went meanwhile
    assert not any(os.path.exists(p) for p in strays)
    table = get_table(opts, "db.t")
    assert_table_equals(table, expected_upsert([FIRST, SECOND], "id"), "id")
    refs = SnapshotReader(table).needed_by(table.snapshot_manager().list_snapshots())
    assert all(os.path.exists(p) for p in refs.data | refs.metadata)


def test_orphan_removal_during_a_compaction_commit_keeps_its_rewritten_files(warehouse, monkeypatch):
    """A COMPACT commit references data files its rewrite wrote moments ago; nothing stages them."""
    table, expected = cross_partition_table(warehouse, batches(3, seed=5))
    age(table.table_path)
    seen = []
    pause_before_snapshot(monkeypatch, lambda snapshot: seen.append(remove_orphan_files(
        get_table({"warehouse": warehouse}, "db.t"), now_ms())))
    result = compact(table, run_id="c", full=True, scope="table")
    assert result["compacted_buckets"] > 0 and len(seen) == 1
    assert seen[0].orphan_files == 0
    assert_reads(get_table({"warehouse": warehouse}, "db.t"), warehouse, expected, ["id"])


def test_no_file_younger_than_an_hour_is_an_orphan(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(FIRST), run_id="first")
    table = get_table(opts, "db.t")
    young, old = stray_files(table.table_path)
    age(young, 3000)  # 50 minutes
    result = remove_orphan_files(table, now_ms() + 60_000)  # even a cut-off in the future
    assert result.orphan_files == 1 and os.path.exists(young) and not os.path.exists(old)


def test_older_than_below_the_floor_is_refused_before_anything_is_deleted(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(FIRST), run_id="first")
    strays = stray_files(get_table(opts, "db.t").table_path)
    for margin in (0, 3_599_999, -1):
        with pytest.raises(ValidationError, match=rf"table db.t, value {margin}: older_than_ms must be at least "
                                                  r"3600000 \(one hour\)"):
            run_remove_orphan_files(OrphansSpec(catalog_options=opts, table="db.t", older_than_ms=margin))
    assert all(os.path.exists(p) for p in strays)
    assert run_remove_orphan_files(OrphansSpec(catalog_options=opts, table="db.t",
                                               older_than_ms=3_600_000)).orphan_files == 2
    for older_than in (timedelta(0), timedelta(minutes=59), timedelta(seconds=-1)):
        with pytest.raises(ValueError, match="table db.t: older_than must be a timedelta of at least 1 hour"):
            PaimonRemoveOrphanFilesOperator(task_id="o", table="db.t", older_than=older_than)
    assert PaimonRemoveOrphanFilesOperator(task_id="o", table="db.t", older_than=timedelta(hours=1)).older_than


@pytest.mark.parametrize("path, normal", [
    ("/w/db.db/t/dt=a/bucket-0/f", "/w/db.db/t/dt=a/bucket-0/f"),
    ("file:/w/db.db/t/dt=a/bucket-0/f", "/w/db.db/t/dt=a/bucket-0/f"),
    ("file:///w/db.db/t/dt=a/bucket-0/f", "/w/db.db/t/dt=a/bucket-0/f"),
    ("file:///w/db.db/t/", "/w/db.db/t"),
    ("s3://bucket/w/db.db/t/f", "bucket/w/db.db/t/f"),
])
def test_normalize_spells_every_local_form_alike(path, normal):
    assert normalize(path) == normal


def test_file_uri_warehouse_has_no_orphans_when_healthy_and_loses_only_true_ones(warehouse):
    uri = "file://" + warehouse
    table, expected = cross_partition_table(uri, batches(3, seed=7))
    compact(table, run_id="c", full=True, scope="table")  # replaced files stay: older snapshots need them
    table = get_table({"warehouse": uri}, "db.t")
    assert table.table_path.startswith("file:")
    age(table.table_path)
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(warehouse + "/db.db/t") for f in fs)
    healthy = remove_orphan_files(table, now_ms(), dry_run=True)
    assert (healthy.orphan_files, healthy.sample) == (0, [])
    strays = stray_files(table.table_path)
    dry = remove_orphan_files(table, now_ms(), dry_run=True)
    assert dry.orphan_files == 2 and sorted(normalize(p) for p in dry.sample) == sorted(strays)
    assert all(os.path.exists(p) for p in strays)
    done = remove_orphan_files(table, now_ms())
    assert done.orphan_files == 2
    assert sorted(os.path.join(d, f) for d, _, fs in os.walk(warehouse + "/db.db/t") for f in fs) == files
    assert_reads(get_table({"warehouse": uri}, "db.t"), warehouse, expected, ["id"], rust=False)


def test_a_file_referenced_under_another_spelling_stops_the_removal(warehouse):
    """The guard behind the file:// fix: had the spellings still differed, every live data file would have
    looked unreferenced; the same (unique) file name under two paths refuses instead."""
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    table = get_table(opts, "db.t")
    live = "/w/db.db/t/dt=a/bucket-0/data-1b4e28ba-2fa1-11d2-883f-0016d3cca427-0.parquet"
    refs = References(data={"file:" + live})
    with pytest.raises(PaimonJobError, match=r"table db.t: listed file /w/db.db/t/dt=a/bucket-0/data-1b4e.* is "
                                             r"referenced as file:/w/db.db/t/.*; paths do not line up"):
        _check_paths_line_up(table, [live, "/w/db.db/t/manifest/manifest-x-0"], refs)
    _check_paths_line_up(table, [live], References(data={live}))  # the same spelling: nothing to refuse
