"""One bootstrap-index, the same for every executor (the Spark job, the tests' local runner): decide
(engine/index/bootstrap.py), build or catch up the shards through the executor's tasks, publish the
manifest last, clean up what no index needs any more.

The task functions (engine/index/bootstrap.py, which imports no pypaimon) are bound with plain data only
(functools.partial), so an executor can ship them to its workers."""
from __future__ import annotations

import functools
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.snapshot.history import check_base, fingerprint
from airflow_paimon.engine.index.bootstrap import (CATCH_UP, NOT_NEEDED, REBUILD, REUSE, catch_up_file,
                                                   catch_up_shard, plan_bootstrap, rebuild_part)
from airflow_paimon.engine.index.layout import (IndexManifest, ShardMeta, key_signature, merge_shard_parts,
                                                publish_manifest)
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.index.sharding import KEY_HASH_SCHEME
from airflow_paimon.engine.index.store import clean_up
from airflow_paimon.engine.files.scan import buckets_at, file_path
from airflow_paimon.engine.files.deletion_vectors import deleted_rows_at
from airflow_paimon.engine.assign.shapes import TableShape, shape_of
from airflow_paimon.engine.jobs.specs import BootstrapResult, BootstrapSpec
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

ROWS_PER_REBUILD_TASK = 10_000_000  # bounds a task's memory: its keys are sorted in memory per shard


class IndexTasks(Protocol):
    """How an executor runs the bootstrap's tasks (Spark: spark/bootstrap.py; in-process: tests/local_runner.py)."""

    @property
    def parallelism(self) -> int:
        """How many tasks the executor runs at once."""

    def rebuild(self, build: Callable[[int], list[ShardMeta]], parts: int) -> list[ShardMeta]:
        """``build(part)`` for every part in 0..parts-1, no shuffle; all the ShardMetas they return."""

    def catch_up(self, read_file: Callable[[int], pa.Table], files: int,
                 apply: Callable[[int, pa.Table], ShardMeta], shards: int) -> list[ShardMeta]:
        """``read_file(i)`` for every file: change rows with a ``shard`` column (0..shards-1); the rows of
        shard s, all together, to ``apply(s, rows)``; the ShardMetas it returns."""


def bootstrap_index(spec: BootstrapSpec, tasks: IndexTasks | None) -> BootstrapResult | None:
    """The bootstrap. ``tasks`` None: decide from table metadata alone (the operator, before it would submit a
    Spark job): the result when the index is reused or not needed, None when shards must be built or caught up
    (nothing written then but what the job would also do first: creating or evolving the declared table)."""
    identifier, shards = spec.table, spec.shards
    table_spec = TableSpec.from_dict(spec.table_spec) if spec.table_spec else None
    table = get_or_create_table(spec.catalog_options, identifier, table_spec, spec.schema_evolution)
    shape = shape_of(table)
    if not shape.needs_index:
        return _no_index_needed(table, shape, shards, "metadata" if tasks is None else "spark")
    return index_at_latest(table, identifier, layout.index_dir(spec.index_root, identifier), shards, tasks)


def index_at_latest(table: FileStoreTable, identifier: str, index_uri: str, shards: int,
                    tasks: IndexTasks | None) -> BootstrapResult | None:
    """The global key index of ``table``'s latest snapshot under ``index_uri``: reused, caught up or rebuilt, then
    the clean-up. Also what assign-and-write runs when the index its bootstrap returned is gone
    (engine/runs/assign_and_write.py)."""
    plan = plan_bootstrap(table, index_uri, shards)
    log.debug("bootstrap of %s at snapshot %s: %s (%s)", identifier, plan.snapshot_id, plan.decision, plan.reason)

    bucket_files = []  # a rebuild's input; only a rebuild reads the latest snapshot's files
    if plan.decision == REBUILD:
        bucket_files = buckets_at(table, _planned_snapshot(table, plan))
    # Work for the job: shards to build from data files, or to catch up. An index of no keys (an empty table) is
    # written here as the job would write it.
    if tasks is None and (plan.decision == CATCH_UP or bucket_files):
        return None
    files_read = 0
    if plan.decision == REUSE:
        manifest = plan.base
        assert manifest is not None  # REUSE names the index it reuses
        if manifest.snapshot_id != plan.snapshot_id:  # only COMPACT snapshots since: same keys, newer snapshot
            manifest = publish_manifest(index_uri, replace(manifest, snapshot_id=plan.snapshot_id, origin=REUSE,
                                                           snapshot_fingerprint=plan.snapshot_fingerprint,
                                                           **_schema_of(table)))
    elif plan.decision == CATCH_UP:
        assert tasks is not None  # without tasks, returned above
        files_read = len(plan.added_files)
        manifest = _catch_up(table, plan, index_uri, tasks)
    else:
        files_read = sum(len(b.paths) for b in bucket_files)
        manifest = _rebuild(table, plan, bucket_files, shards, index_uri, tasks)
    crash_point("bootstrap.after_manifest")
    clean_up(index_uri)
    return BootstrapResult(table=identifier, shards=shards, base_snapshot_id=plan.snapshot_id, index_uri=index_uri,
                           keys=manifest.keys, reused=plan.decision == REUSE, index_decision=plan.decision,
                           reason=plan.reason, data_files_read=files_read,
                           decided_by="metadata" if tasks is None else "spark",
                           base_snapshot_fingerprint=plan.snapshot_fingerprint)


def _planned_snapshot(table: FileStoreTable, plan):
    """The snapshot the plan was made at, read again: the same one, or RolledBackError (a rollback since)."""
    check_base(table, plan.snapshot_id, plan.snapshot_fingerprint)
    return table.snapshot_manager().get_snapshot_by_id(plan.snapshot_id) if plan.snapshot_id else None


def _no_index_needed(table: FileStoreTable, shape: TableShape, shards: int, decided_by: str) -> BootstrapResult:
    """Fixed buckets hash the key, dynamic buckets keep Paimon's own HASH index, append tables have no key:
    the base snapshot is all the next task needs. Unsupported shapes are refused here, before any work."""
    shape.check(table)
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return BootstrapResult(table=table.identifier.get_full_name(), shards=shards,
                           base_snapshot_id=snapshot.id if snapshot else None, index_uri=None, keys=0, reused=True,
                           index_decision=NOT_NEEDED, reason=f"{shape.name} table needs no global index",
                           data_files_read=0, decided_by=decided_by, base_snapshot_fingerprint=fingerprint(snapshot))


def _schema_of(table: FileStoreTable) -> dict:
    """The schema fields of a manifest of ``table`` now (a reused or caught-up index may be of an older one)."""
    return {"schema_id": table.table_schema.id, "key_signature": key_signature(table.table_schema)}


def _key_facts(table: FileStoreTable) -> dict:
    """What a task needs to encode keys and places: plain data, picklable without pypaimon."""
    from pypaimon.schema.data_types import PyarrowFieldParser

    return {"primary_keys": list(table.primary_keys),
            "partition_types": [PyarrowFieldParser.from_paimon_type(f.type) for f in table.partition_keys_fields]}


# --- rebuild -------------------------------------------------------------------------------------------------

def _rebuild(table: FileStoreTable, plan, bucket_files, shards: int, index_uri: str,
             tasks: IndexTasks | None) -> IndexManifest:
    """One stage, no shuffle: each task reads a balanced share of the buckets and writes its part of every
    shard (a key lives in one bucket, so the parts never overlap)."""
    snapshot_id = plan.snapshot_id
    total_rows = sum(b.row_count for b in bucket_files)
    # no tasks: an empty table's index, no files to read (bootstrap_index returns before a rebuild with files)
    n = (min(len(bucket_files), max(tasks.parallelism, -(-total_rows // ROWS_PER_REBUILD_TASK)))
         if bucket_files and tasks is not None else 0)
    # a deletion-vector table: path -> the row positions its vector marks ({} otherwise), read once
    marked = deleted_rows_at(table, table.snapshot_manager().get_snapshot_by_id(snapshot_id) if snapshot_id else None)
    groups = balance([(list(b.paths), b.partition, b.bucket, {p: marked[p] for p in b.paths if p in marked})
                      for b in bucket_files], [b.row_count for b in bucket_files], n)
    build = functools.partial(rebuild_part, groups=groups, index_uri=index_uri, snapshot_id=snapshot_id,
                              shards=shards, **_key_facts(table))
    parts = (sorted(tasks.rebuild(build, len(groups)), key=lambda m: [f.path for f in m.files])
             if groups and tasks is not None else [])
    crash_point("bootstrap.before_manifest")
    name = table.identifier.get_full_name()
    manifest = publish_manifest(index_uri, IndexManifest(name, snapshot_id, table.table_schema.id, shards,
                                                         KEY_HASH_SCHEME, merge_shard_parts(shards, parts),
                                                         origin=REBUILD,
                                                         key_signature=key_signature(table.table_schema),
                                                         snapshot_fingerprint=plan.snapshot_fingerprint))
    log.debug("rebuilt the index of %s at snapshot %s: %s keys in %s tasks", name, snapshot_id, manifest.keys,
              len(groups))
    return manifest


def balance(items: list, weights: list[int], n: int) -> list[list]:
    """``items`` in ``n`` groups of about equal weight (largest first, each to the lightest group)."""
    groups: list[list] = [[] for _ in range(n)]
    loads = [0] * n
    for i in sorted(range(len(items)), key=lambda i: -weights[i]):
        lightest = loads.index(min(loads))
        groups[lightest].append(items[i])
        loads[lightest] += weights[i]
    return [g for g in groups if g]


# --- catch up ------------------------------------------------------------------------------------------------

def _catch_up(table: FileStoreTable, plan, index_uri: str, tasks: IndexTasks) -> IndexManifest:
    """The files appended since the base index, read in parallel; each shard's changes applied by one task."""
    base, target = plan.base, plan.snapshot_id
    files = [(file_path(table, e), tuple(e.partition.values), e.bucket, sid) for sid, e in plan.added_files]
    read = functools.partial(catch_up_file, files=files, shards=base.shards, **_key_facts(table))
    apply = functools.partial(catch_up_shard, base=base, index_uri=index_uri, target=target,
                              options=TableOptions.of(table).index)
    metas = {m.shard: m for m in tasks.catch_up(read, len(files), apply, base.shards)}
    manifest = replace(base, snapshot_id=target, origin=CATCH_UP, snapshot_fingerprint=plan.snapshot_fingerprint,
                       shard_meta=[metas.get(m.shard, m) for m in base.shard_meta], **_schema_of(table))
    crash_point("bootstrap.before_manifest")
    return publish_manifest(index_uri, manifest)


def shards_in(rows: pa.Table) -> list[tuple[int, pa.Table]]:
    """(shard, its rows) of change rows, for an executor that has them all in one place."""
    shard_ids = rows.column("shard").to_numpy()
    return [(int(s), rows.filter(pa.array(shard_ids == s))) for s in np.unique(shard_ids)]
