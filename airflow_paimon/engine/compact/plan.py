"""Compaction planning on the driver: per (partition, bucket) in scope, which files to merge, at which level."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_paimon.engine.commit.committer import COMPACT
from airflow_paimon.engine.compact.levels import level_sorted_runs, non_empty_highest_level, number_of_levels
from airflow_paimon.engine.compact.strategy import CompactUnit, UniversalCompaction, pick_full_compaction
from airflow_paimon.engine.snapshot.history import commit_of, fingerprint, newest_first
from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.files.scan import file_path, live_entries
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.files.deletion_vectors import bucket_deletion_vectors, deleted_entry as _deleted, positions

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


@dataclass
class BucketCompaction:
    """One Spark task's work: merge ``files`` of one bucket into ``output_level``."""

    partition: tuple
    bucket: int
    total_buckets: int
    output_level: int
    max_level: int
    drop_delete: bool
    files: list  # DataFileMeta picked, as the manifest holds them
    paths: dict = field(default_factory=dict)  # file name -> path
    deleted: dict = field(default_factory=dict)  # file name -> row positions its deletion vector marks


FULL_PROPERTY = "airflow-paimon.compact.full"  # on the COMPACT snapshot of a full compaction


@dataclass
class CompactionPlan:
    snapshot_id: int | None  # the snapshot planned at; the commit detects conflicts against it
    buckets: list[BucketCompaction]
    entries: dict  # (partition, bucket, file name, level) -> ManifestEntry of every picked file
    index_deletes: list = field(default_factory=list)  # deletion-vector index entries the compaction drops
    full: bool = False  # every bucket in scope into one run at the max level
    snapshot_fingerprint: str | None = None  # which snapshot ``snapshot_id`` is (engine/snapshot/history.py)


def writes_since_compaction(table: FileStoreTable, snapshot_id: int | None, full_only: bool = False) -> list:
    """The writes up to ``snapshot_id`` since the latest compaction before it (``full_only``: the latest full
    compaction, engine/compact/commit.py marks them), newest first; stops at an expired snapshot. A COMPACT
    snapshot of the same commit identity as the snapshot before it is the second half of a deletion-vector or
    lookup write (engine/commit/compact_increment.py), not a compaction: it counts with its write."""
    found, walk = [], iter(newest_first(table, start=snapshot_id or 0))
    snap = next(walk, None)
    while snap is not None:
        before = next(walk, None)  # the snapshot before it (None: expired, or none)
        if snap.commit_kind == COMPACT and (before is None or commit_of(before) != commit_of(snap)):
            if not full_only or is_full_compaction(snap):
                break
            # a compaction that was not full: its buckets still wait for the full one
        else:
            found.append(snap)
        snap = before
    return found


def write_commits(snapshots) -> int:
    """Commits among write snapshots: a deletion-vector or lookup write is two snapshots of one identity."""
    return len({(s.commit_user, s.commit_identifier) for s in snapshots})


def is_full_compaction(snapshot) -> bool:
    return (snapshot.properties or {}).get(FULL_PROPERTY) == "true"


def touched_buckets(table: FileStoreTable, snapshots) -> set[tuple]:
    """(partition, bucket) pairs the snapshots' own deltas added or removed files in."""
    reader = SnapshotReader(table)
    return {(tuple(e.partition.values), e.bucket) for s in snapshots for e in reader.delta_entries(s)}


def plan_compaction(table: FileStoreTable, snapshot, full: bool, scope_snapshots: list | None = None,
                    partition_filter: dict | None = None) -> CompactionPlan:
    """Pick per bucket at ``snapshot``. ``scope_snapshots``: only buckets their deltas touched (None: all)."""
    if snapshot is None:
        return CompactionPlan(None, [], {})
    options = TableOptions.of(table)
    compact_options = options.compaction
    strategy = UniversalCompaction(compact_options)
    scope = touched_buckets(table, scope_snapshots) if scope_snapshots is not None else None
    groups: dict[tuple, list] = defaultdict(list)
    for e in live_entries(table, snapshot):
        key = (tuple(e.partition.values), e.bucket)
        if scope is not None and key not in scope:
            continue
        if partition_filter and not _matches(table, key[0], partition_filter):
            continue
        groups[key].append(e)

    buckets, entries, index_deletes = [], {}, []
    with_vectors = options.deletion_vectors
    for (partition, bucket), es in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        files = [e.file for e in es]
        num_levels = number_of_levels(compact_options.levels, files)
        runs = level_sorted_runs(files)
        unit = pick_full_compaction(num_levels, runs) if full else strategy.pick(num_levels, runs)
        vectors: list = []
        deleted: dict = {}
        if with_vectors:  # the whole bucket into one run at the max level: its deletion vectors all go
            vectors, dvs = bucket_deletion_vectors(table, snapshot, partition, bucket)
            deleted = {name: positions(dv) for name, dv in dvs.items()}
            if unit is not None or (full and deleted):
                unit = CompactUnit(num_levels - 1, tuple(runs))
        if unit is None:
            continue
        index_deletes += [_deleted(e) for e in vectors]
        picked = unit.files
        # Deletes may go only when nothing older lies below the output (Paimon's dropDelete rule).
        drop_delete = unit.output_level != 0 and unit.output_level >= non_empty_highest_level(files)
        by_name = {(e.file.file_name, e.file.level): e for e in es}
        picked_entries = [by_name[(f.file_name, f.level)] for f in picked]
        for e in picked_entries:
            entries[(partition, bucket, e.file.file_name, e.file.level)] = e
        buckets.append(BucketCompaction(partition, bucket, es[0].total_buckets, unit.output_level, num_levels - 1,
                                        drop_delete, picked, {e.file.file_name: file_path(table, e)
                                                              for e in picked_entries}, deleted))
    return CompactionPlan(snapshot.id, buckets, entries, index_deletes, full, fingerprint(snapshot))


def _matches(table: FileStoreTable, partition: tuple, partition_filter: dict) -> bool:
    values = dict(zip(table.partition_keys, partition))
    return all(str(values.get(k)) == str(v) for k, v in partition_filter.items())
