"""Snapshot expiry and orphan-file removal on real tables: what is kept, what is deleted, and that every
retained snapshot (and tag) still reads exactly what it read before."""
from __future__ import annotations

import os
import time

import pandas as pd
import pytest

from airflow_paimon.engine.jobs.specs import STAGING_RETENTION_SECONDS
from airflow_paimon.engine.errors import PaimonJobError, ValidationError
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.maintenance.orphans import remove_orphan_files
from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.table.table import get_table
from oracle import read_table
from compaction_tables import batches, cross_partition_table
from local_runner import compact
from file_age import age

NOW_PLUS = lambda: int(time.time() * 1000) + 60_000  # noqa: E731  (everything past the one-hour floor counts as old)


def at(table, **options) -> pd.DataFrame:
    return read_table(table.copy(options)).sort_values("id").reset_index(drop=True)


def snapshot_reads(table) -> dict[int, pd.DataFrame]:
    return {s.id: at(table, **{"scan.snapshot-id": str(s.id)}) for s in table.snapshot_manager().list_snapshots()}


def assert_every_needed_file_exists(table, snapshots):
    refs = SnapshotReader(table).needed_by(snapshots)
    missing = [p for p in refs.data | refs.metadata if not os.path.exists(p)]
    assert not missing, missing[:5]


@pytest.fixture
def history(warehouse):
    """Six upserts with moves, a universal and a full compaction: 8 snapshots, files replaced along the way."""
    table, expected = cross_partition_table(warehouse, batches(6, seed=9))
    compact(table, run_id="u", scope="table")
    compact(get_table({"warehouse": warehouse}, "db.t"), run_id="f", full=True, scope="table")
    table = get_table({"warehouse": warehouse}, "db.t")
    assert len(table.snapshot_manager().list_snapshots()) == 8
    age(table.table_path)  # past orphan removal's one-hour floor: every file gets judged
    return table, expected


def test_expiry_keeps_num_retained_min_and_never_deletes_a_needed_file(warehouse, history):
    table, expected = history
    reads = snapshot_reads(table)
    options = TableOptions.parse("db.t", {"snapshot.num-retained.min": "3", "snapshot.time-retained": "0 ms"}).expire
    result = expire_snapshots(table, options)  # snapshot 6 still needs every file compaction 7 replaced
    assert (result.expired_snapshots, result.deleted_data_files) == (5, 0)
    options = TableOptions.parse("db.t", {"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms"}).expire
    result = expire_snapshots(get_table({"warehouse": warehouse}, "db.t"), options)
    table = get_table({"warehouse": warehouse}, "db.t")
    kept = table.snapshot_manager().list_snapshots()
    assert [s.id for s in kept] == [7, 8] and result.expired_snapshots == 1
    assert result.deleted_data_files > 0 and result.earliest_snapshot_id == 7
    assert_every_needed_file_exists(table, kept)
    for s in kept:  # each retained snapshot reads what it read before expiry
        pd.testing.assert_frame_equal(at(table, **{"scan.snapshot-id": str(s.id)}), reads[s.id])
    pd.testing.assert_frame_equal(read_table(table)[list(expected.columns)].sort_values("id").reset_index(drop=True),
                                  expected, check_dtype=False)
    # expiry left no unreferenced file behind, and a second run is a no-op
    assert remove_orphan_files(table, NOW_PLUS(), dry_run=True).orphan_files == 0
    assert expire_snapshots(table, options).expired_snapshots == 0


def test_time_retained_protects_young_snapshots_and_num_retained_max_caps_them(warehouse, history):
    table, _ = history
    young = TableOptions.parse("db.t", {"snapshot.num-retained.min": "1"}).expire  # default 1 h: all are young
    assert expire_snapshots(table, young).expired_snapshots == 0
    capped = TableOptions.parse("db.t", {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "4"}).expire
    assert expire_snapshots(table, capped).expired_snapshots == 4
    table = get_table({"warehouse": warehouse}, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [5, 6, 7, 8]
    assert_every_needed_file_exists(table, table.snapshot_manager().list_snapshots())


def test_expiry_limit_and_dry_run(warehouse, history):
    table, _ = history
    options = TableOptions.parse("db.t", {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 s",
                                        "snapshot.expire.limit": "2"}).expire
    files = sum(len(fs) for _, _, fs in os.walk(table.table_path))
    assert expire_snapshots(table, options, dry_run=True).expired_snapshots == 2
    assert sum(len(fs) for _, _, fs in os.walk(table.table_path)) == files
    assert expire_snapshots(table, options).earliest_snapshot_id == 3


def test_tagged_snapshot_survives_expiry(warehouse, history):
    table, _ = history
    before = at(table, **{"scan.snapshot-id": "2"})
    table.create_tag("keep", snapshot_id=2)
    expire_snapshots(table, TableOptions.parse("db.t", {"snapshot.num-retained.min": "1",
                                                      "snapshot.time-retained": "0 ms"}).expire)
    table = get_table({"warehouse": warehouse}, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [8]
    pd.testing.assert_frame_equal(at(table, **{"scan.tag-name": "keep"}), before)


def test_bad_retention_options_are_refused():
    with pytest.raises(ValidationError, match="snapshot.num-retained.min"):
        _ = TableOptions.parse("db.t", {"snapshot.num-retained.min": "0"}).expire
    with pytest.raises(ValidationError, match="snapshot.num-retained.max"):
        _ = TableOptions.parse("db.t", {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"}).expire


def test_orphan_removal_deletes_uncommitted_writes_and_stale_staging_only(warehouse, history):
    table, expected = history
    # a write that staged files but never committed, and a staged commit a dead run left behind
    uncommitted = os.path.join(table.table_path, "dt=a", "bucket-0", "data-never-committed-0.parquet")
    with open(uncommitted, "wb") as f:
        f.write(b"PAR1")
    stray_manifest = os.path.join(table.table_path, "manifest", "manifest-crashed-commit-0")
    with open(stray_manifest, "wb") as f:
        f.write(b"x")
    age(uncommitted)
    age(stray_manifest)
    staging = os.path.join(warehouse, ".airflow-paimon", "staging", "db.t", "airflow-paimon-dead")
    os.makedirs(staging)
    with open(os.path.join(staging, "staged.json"), "w") as f:
        f.write("{}")
    abandoned = time.time() - STAGING_RETENTION_SECONDS - 60  # staging goes only once abandoned
    os.utime(os.path.join(staging, "staged.json"), (abandoned, abandoned))
    os.utime(staging, (abandoned, abandoned))
    staging_root = os.path.join(warehouse, ".airflow-paimon", "staging")

    # default margin (a day): the files are too young; the abandoned staging is not
    fresh = remove_orphan_files(table, staging_root=staging_root, dry_run=True)
    assert (fresh.orphan_files, fresh.stale_staging_dirs) == (0, 1)
    dry = remove_orphan_files(table, NOW_PLUS(), staging_root=staging_root, dry_run=True)
    assert dry.orphan_files == 2 and os.path.exists(uncommitted)
    done = remove_orphan_files(table, NOW_PLUS(), staging_root=staging_root)
    assert (done.orphan_files, done.stale_staging_dirs) == (2, 1)
    assert not os.path.exists(uncommitted) and not os.path.exists(stray_manifest) and not os.path.exists(staging)
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_every_needed_file_exists(table, table.snapshot_manager().list_snapshots())
    pd.testing.assert_frame_equal(read_table(table)[list(expected.columns)].sort_values("id").reset_index(drop=True),
                                  expected, check_dtype=False)


def test_orphan_removal_after_expiry_finds_nothing_more_to_delete_than_unreferenced(warehouse, history):
    table, expected = history
    reads = snapshot_reads(table)
    expire_snapshots(table, TableOptions.parse("db.t", {"snapshot.num-retained.min": "2",
                                                      "snapshot.time-retained": "0 ms"}).expire)
    table = get_table({"warehouse": warehouse}, "db.t")
    remove_orphan_files(table, NOW_PLUS())
    for s in table.snapshot_manager().list_snapshots():
        pd.testing.assert_frame_equal(at(table, **{"scan.snapshot-id": str(s.id)}), reads[s.id])


def test_expiry_keeps_what_a_streaming_consumer_reads_next(warehouse, history):
    """Paimon's ConsumerManager: consumer/consumer-<id> with nextSnapshot; that snapshot and later ones stay."""
    from pypaimon.consumer.consumer import Consumer

    table, expected = history
    reads = snapshot_reads(table)
    table.consumer_manager().reset_consumer("slow", Consumer(next_snapshot=4))
    table.consumer_manager().reset_consumer("fast", Consumer(next_snapshot=8))
    options = TableOptions.parse("db.t", {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}).expire
    result = expire_snapshots(get_table({"warehouse": warehouse}, "db.t"), options)
    table = get_table({"warehouse": warehouse}, "db.t")
    kept = table.snapshot_manager().list_snapshots()
    assert [s.id for s in kept] == [4, 5, 6, 7, 8] and result.earliest_snapshot_id == 4
    assert_every_needed_file_exists(table, kept)
    for s in kept:  # the consumer can still read every snapshot it has not read yet
        pd.testing.assert_frame_equal(at(table, **{"scan.snapshot-id": str(s.id)}), reads[s.id])
    table.consumer_manager().delete_consumer("slow")
    expire_snapshots(get_table({"warehouse": warehouse}, "db.t"), options)
    kept = get_table({"warehouse": warehouse}, "db.t").snapshot_manager().list_snapshots()
    assert [s.id for s in kept] == [8]


def test_expiry_refuses_a_table_with_branches(warehouse, history):
    table, expected = history
    table.branch_manager().create_branch("side")
    options = TableOptions.parse("db.t", {"snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}).expire
    with pytest.raises(PaimonJobError, match="table db.t: has branches"):
        expire_snapshots(get_table({"warehouse": warehouse}, "db.t"), options)
    assert len(get_table({"warehouse": warehouse}, "db.t").snapshot_manager().list_snapshots()) == 8
