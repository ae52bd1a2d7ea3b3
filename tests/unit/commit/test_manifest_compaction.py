"""Manifest compaction in the commit (engine/commit/manifest_merge.py, Paimon's ManifestFileMerger): many small
upserts (with a compaction now and then, as the example DAG runs it) keep the latest snapshot's manifest count
bounded, where without merging it grows by one per commit; the table reads exactly as the oracle says with
pypaimon and pypaimon-rust, at the latest snapshot and at an older one; full compaction leaves no DELETE
entry; expiry then deletes the replaced manifests; a commit killed after merging lands exactly once."""
from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.options import ManifestMergeOptions, TableOptions
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.maintenance.orphans import remove_orphan_files
from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.files.scan import live_entries
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from compaction_tables import COLUMNS
from faults.harness import attempt
from file_age import age
from local_runner import bootstrap, compact, stage_run, upsert
from oracle import expected_upsert, read_table

CROSS = {"primary_keys": ["id"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "60"}}
FIXED = {"primary_keys": ["dt", "id"], "options": {"bucket": "2"}}
COMPACT_EVERY = 10
NOW_PLUS = lambda: int(time.time() * 1000) + 60_000  # noqa: E731  (every aged file counts as old)


def table_spec(shape: dict, options: dict) -> TableSpec:
    return TableSpec.from_dict({"columns": COLUMNS, "partition_keys": ["dt"], "primary_keys": shape["primary_keys"],
                                "options": {**shape["options"], **options}})


def small_batch(rng, rows: int = 25, keys: int = 300) -> pd.DataFrame:
    return pd.DataFrame({"id": rng.choice(keys, rows, replace=False).astype("int64"),
                         "dt": rng.choice(list("abcd"), rows), "v": rng.random(rows).round(6)})


def oracle(batches: list[pd.DataFrame], key: list[str]) -> pd.DataFrame:
    """Last row per primary key (a cross-partition key moves with its last row), independent of the engine."""
    if key == ["id"]:
        return expected_upsert(batches, "id")
    return pd.concat(batches).drop_duplicates(key, keep="last").sort_values(key).reset_index(drop=True)


class History:
    """``n`` small upserts into a new table, a compaction every COMPACT_EVERY; per snapshot the oracle."""

    def __init__(self, warehouse: str, shape: dict, options: dict, n: int, seed: int = 5):
        self.warehouse, self.opts = warehouse, {"warehouse": warehouse}
        self.spec = table_spec(shape, options)
        self.key = list(shape["primary_keys"])
        get_or_create_table(self.opts, "db.t", self.spec)
        rng, self.batches, self.expected = np.random.default_rng(seed), [], {}
        for i in range(n):
            self.upsert(small_batch(rng), f"r{i}")
            if (i + 1) % COMPACT_EVERY == 0:
                compact(self.table(), run_id=f"c{i}", full=True, scope="table")
                self.expected[self.latest().id] = oracle(self.batches, self.key)

    def upsert(self, batch: pd.DataFrame, run_id: str):
        self.batches.append(batch)
        upsert(self.context(), self.arrow(batch), run_id=run_id)
        self.expected[self.latest().id] = oracle(self.batches, self.key)

    def context(self):
        return bootstrap(self.opts, "db.t", self.warehouse + "/.index", 2)

    def arrow(self, batch: pd.DataFrame) -> pa.Table:
        return pa.Table.from_pandas(batch, schema=self.spec.arrow_schema(), preserve_index=False)

    def table(self):
        return get_table(self.opts, "db.t")

    def latest(self):
        return self.table().snapshot_manager().get_latest_snapshot()

    def snapshots(self):
        return self.table().snapshot_manager().list_snapshots()


def manifest_count(table, snapshot) -> int:
    lists = ManifestListManager(table)
    return len(lists.read_base(snapshot)) + len(lists.read_delta(snapshot))


def base_entries(table, snapshot) -> list:
    files = ManifestFileManager(table)
    return [e for m in ManifestListManager(table).read_base(snapshot) for e in files.read(m.file_name)]


def rust_read(warehouse: str, snapshot_id: int) -> pd.DataFrame:
    from pypaimon_rust.datafusion import PaimonCatalog

    builder = PaimonCatalog({"warehouse": warehouse}).get_table("db.t").new_read_builder(
        {"scan.snapshot-id": str(snapshot_id)})
    batches = builder.new_read().read(builder.new_scan().plan().splits())
    return pa.Table.from_batches(batches).to_pandas() if batches else pd.DataFrame(columns=["id", "dt", "v"])


def assert_reads_at(h: History, snapshot_id: int) -> None:
    """pypaimon and pypaimon-rust read snapshot ``snapshot_id`` exactly as the oracle, no key twice."""
    expected = h.expected[snapshot_id].sort_values(h.key).reset_index(drop=True)
    pypaimon = read_table(h.table().copy({"scan.snapshot-id": str(snapshot_id)}))
    for reader, actual in (("pypaimon", pypaimon), ("pypaimon-rust", rust_read(h.warehouse, snapshot_id))):
        assert not actual.duplicated(h.key).any(), f"{reader}: duplicate keys at snapshot {snapshot_id}"
        actual = actual[list(expected.columns)].sort_values(h.key).reset_index(drop=True)
        pd.testing.assert_frame_equal(actual, expected, check_dtype=False, obj=f"{reader} at {snapshot_id}")


@pytest.mark.parametrize("shape", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
@pytest.mark.slow
def test_manifest_count_stays_bounded_and_reads_match_the_oracle(warehouse, shape):
    min_count, n = 8, 42
    h = History(warehouse, shape, {"manifest.merge-min-count": str(min_count)}, n)
    table, snapshots = h.table(), h.snapshots()
    assert len(snapshots) == n + n // COMPACT_EVERY
    counts = [manifest_count(table, s) for s in snapshots]
    # base + delta: the merged base holds fewer than merge-min-count small manifests, the delta one
    assert max(counts) <= min_count, counts
    assert counts[-1] < min_count and counts.count(1) + counts.count(2) >= 4, counts  # merged again and again
    for s in (snapshots[-1].id, snapshots[len(snapshots) // 2].id, 5):  # latest, and time travel
        assert_reads_at(h, s)


@pytest.mark.slow
def test_without_merging_the_manifest_count_grows_with_every_commit(warehouse):
    h = History(warehouse, CROSS, {"manifest.merge-min-count": "100000"}, 24)
    table = h.table()
    counts = [manifest_count(table, s) for s in h.snapshots()]
    assert counts == list(range(1, len(counts) + 1))  # each snapshot: every earlier delta + its own
    assert_reads_at(h, h.latest().id)


@pytest.mark.slow
def test_full_compaction_drops_delete_entries(warehouse):
    # a tiny threshold: every commit rewrites all small manifests, without DELETE entries
    h = History(warehouse, CROSS, {"manifest.full-compaction-threshold-size": "1 b",
                                   "manifest.merge-min-count": "100000"}, 22)
    table = h.table()
    for s in h.snapshots()[1:]:
        base = ManifestListManager(table).read_base(s)
        assert len(base) == 1 and base[0].num_deleted_files == 0, (s.id, base)
        entries = base_entries(table, s)
        assert all(e.kind == FileKind.ADD for e in entries) and len(entries) == base[0].num_added_files
    # the base holds exactly the live files of the snapshot before: no deleted file left behind
    latest = h.latest()
    previous = table.snapshot_manager().get_snapshot_by_id(latest.id - 1)
    assert {e.file.file_name for e in base_entries(table, latest)} == {
        e.file.file_name for e in live_entries(table, previous)}
    assert_reads_at(h, latest.id)
    assert_reads_at(h, 7)


def test_full_compaction_keeps_a_big_manifest_without_deleted_partitions(warehouse):
    """A manifest at the target size is listed on as it is unless it holds a deleted file (its partition
    statistics admitting a partition with one, Paimon's partition predicate, spare reading the others)."""
    h = History(warehouse, CROSS, {"manifest.target-file-size": "3 kb", "manifest.merge-min-count": "100000",
                                   "manifest.full-compaction-threshold-size": "1 b"}, 0)
    rng = np.random.default_rng(1)
    h.upsert(pd.DataFrame({"id": np.arange(2000), "dt": rng.choice(list("abcd"), 2000), "v": rng.random(2000)}), "s")
    seed = ManifestListManager(h.table()).read_delta(h.latest())[0]
    assert seed.file_size >= 3 << 10  # not small: changed only for deleted files
    new_rows = lambda i: pd.DataFrame({"id": np.arange(5000 + 10 * i, 5010 + 10 * i), "dt": "e",  # noqa: E731
                                       "v": rng.random(10)})
    for i in range(3):
        h.upsert(new_rows(i), f"e{i}")
    compact(h.table(), run_id="ce", full=True, scope="table", partition_filter={"dt": "e"})  # deletes in e only
    h.expected[h.latest().id] = oracle(h.batches, h.key)
    h.upsert(new_rows(3), "e3")
    table = h.table()
    base = ManifestListManager(table).read_base(h.latest())
    assert seed.file_name in {m.file_name for m in base}  # a..d only: listed on
    assert sum(m.num_deleted_files for m in base) == 0
    assert all(e.kind == FileKind.ADD for e in base_entries(table, h.latest()))
    compact(table, run_id="ca", full=True, scope="table", partition_filter={"dt": "a"})  # deletes in a
    h.expected[h.latest().id] = oracle(h.batches, h.key)
    h.upsert(new_rows(4), "e4")
    table = h.table()
    base = ManifestListManager(table).read_base(h.latest())
    assert seed.file_name not in {m.file_name for m in base}  # it held files of a: rewritten without them
    assert sum(m.num_deleted_files for m in base) == 0
    for s in h.snapshots():
        assert_reads_at(h, s.id)


@pytest.mark.slow
def test_without_full_compaction_the_base_keeps_delete_entries(warehouse):
    h = History(warehouse, CROSS, {"manifest.merge-min-count": "100000"}, 21)
    table = h.table()
    assert sum(m.num_deleted_files for m in ManifestListManager(table).read_base(h.latest())) > 0


@pytest.mark.slow
def test_expiry_deletes_manifests_only_expired_snapshots_listed(warehouse):
    h = History(warehouse, CROSS, {"manifest.merge-min-count": "6"}, 30)
    table = h.table()
    reader = SnapshotReader(table)
    manifest_dir = table.table_path.rstrip("/") + "/manifest"
    before = set(os.listdir(manifest_dir))
    listed = {s.id: {p.rsplit("/", 1)[1] for p in reader.metadata_files(s)} for s in h.snapshots()}
    result = expire_snapshots(table, TableOptions.parse("db.t", {"snapshot.num-retained.min": "4",
                                                               "snapshot.time-retained": "0 ms"}).expire)
    table = h.table()
    retained = table.snapshot_manager().list_snapshots()
    assert [s.id for s in retained] == [s.id for s in h.snapshots()][-4:] and result.expired_snapshots > 20
    needed = set().union(*(listed[s.id] for s in retained))
    gone = set().union(*(v for k, v in listed.items() if k < retained[0].id)) - needed
    after = set(os.listdir(manifest_dir))
    assert gone and not gone & after, sorted(gone & after)[:5]  # replaced manifests really deleted
    assert needed <= after and len(after) < len(before) / 3, (len(after), len(before))
    age(table.table_path)  # past orphan removal's one-hour floor
    assert remove_orphan_files(table, NOW_PLUS(), dry_run=True).orphan_files == 0
    for s in retained:
        assert_reads_at(h, s.id)


@pytest.mark.slow
@pytest.mark.parametrize("crash_at", ["commit.manifests_merged", "commit.before_publish"])
def test_commit_killed_during_merge_lands_once_after_retry(warehouse, tmp_path, crash_at):
    min_count = 5
    h = History(warehouse, CROSS, {"manifest.merge-min-count": str(min_count)}, min_count)
    assert manifest_count(h.table(), h.latest()) == min_count  # the next commit merges
    before = h.latest().id
    batch = small_batch(np.random.default_rng(99))
    spec = stage_run(h.context(), h.arrow(batch), run_id="crashing")
    manifest_dir = h.table().table_path.rstrip("/") + "/manifest"
    manifests = set(os.listdir(manifest_dir))
    killed = attempt("commit", spec, tmp_path / "attempt", crash_at=crash_at)
    assert killed.killed and killed.result is None, killed.log[-2000:]
    merged_only = crash_at == "commit.manifests_merged"
    assert h.latest().id == (before if merged_only else before + 1)
    leftovers = set(os.listdir(manifest_dir)) - manifests  # merged manifests (and the delta) of the attempt
    assert leftovers
    result = run_commit(spec)  # Airflow's retry: the same spec
    assert result.already_committed == (not merged_only)
    h.batches.append(batch)
    table = h.table()
    ours = [s for s in h.snapshots() if s.commit_user == spec.commit_user]
    assert len(ours) == 1 and ours[0].id == before + 1 == h.latest().id
    h.expected[before + 1] = oracle(h.batches, h.key)
    assert manifest_count(table, h.latest()) <= 2  # merged: one base manifest and the delta
    assert_reads_at(h, before + 1)
    # a killed attempt's manifests are orphans (no snapshot lists them): removed once old, the table reads the same
    age(table.table_path)
    orphans = remove_orphan_files(table, NOW_PLUS())
    assert orphans.orphan_files == (len(leftovers) if merged_only else 0), orphans
    assert not leftovers & set(os.listdir(manifest_dir)) if merged_only else leftovers <= set(os.listdir(manifest_dir))
    assert_reads_at(h, before + 1)


def test_unusable_manifest_options_are_refused_before_writing(warehouse):
    for key, value in (("manifest.merge-min-count", "0"), ("manifest.merge-min-count", "many"),
                       ("manifest.full-compaction-threshold-size", "lots"),
                       ("manifest.target-file-size", "0 b")):
        with pytest.raises(ValidationError, match=f"db.t.*{key}"):
            get_or_create_table({"warehouse": warehouse}, "db.t", table_spec(CROSS, {key: value}))
    options = TableOptions.of(get_or_create_table({"warehouse": warehouse}, "db.t", table_spec(CROSS, {}))).manifest
    assert options == ManifestMergeOptions(8 << 20, 30, 16 << 20)  # Paimon's defaults
