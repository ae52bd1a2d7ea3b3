"""bootstrap-index on Spark. The engine decides the path (reuse / catch up / rebuild). A rebuild is one
stage: each task reads a balanced share of the buckets and writes its part of every shard (a key lives in
one bucket, so the parts never overlap). A catch-up reads the added files in parallel, shuffles the keys
to their shard, and task s applies shard s. The driver publishes the manifest last.
Closures here reference only engine modules, so Spark's Python workers never import pypaimon."""
from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import replace

import pyarrow as pa

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.buckets import BucketAssigner
from airflow_paimon.engine.assign.dynamic import check_dynamic_table
from airflow_paimon.engine.assign.fixed import check_fixed_table
from airflow_paimon.engine.bucket_mode import BucketMode
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.bootstrap import (CATCH_UP, CHANGE_ROWS, REBUILD, REUSE, apply_changes, base_parts,
                                             change_rows_of_file, plan_bootstrap)
from airflow_paimon.engine.index.sharding import KEY_HASH_SCHEME
from airflow_paimon.engine.index.layout import (IndexManifest, ShardMeta, merge_shard_parts, shard_meta_from_dict,
                                                shard_meta_json, table_index_uri, write_manifest)
from airflow_paimon.engine.index.shard import IndexOptions
from airflow_paimon.engine.index.store import advance, clean_up, export_changes, load_shard, publish_file
from airflow_paimon.engine.plan import buckets_at, file_path
from airflow_paimon.engine.table import TableSpec, get_or_create_table
from airflow_paimon.spark.routing import ROUTE, per_group, route_column, routes, without_adaptive_execution
from pypaimon.schema.data_types import PyarrowFieldParser

log = logging.getLogger(__name__)
SHARD_RESULT = "shard int, meta string"


def run_bootstrap(spark, spec: dict) -> dict:
    identifier, shards = spec["table"], int(spec["shards"])
    table_spec = TableSpec.from_dict(spec["table_spec"]) if spec.get("table_spec") else None
    table = get_or_create_table(spec["catalog_options"], identifier, table_spec)
    result = {"table": identifier, "shards": shards}
    if BucketMode.of(table) is not BucketMode.CROSS_PARTITION:
        return {**result, **_no_index_needed(table)}
    table_uri = table_index_uri(spec["index_root"], identifier)
    plan = plan_bootstrap(table, table_uri, shards)
    log.info("bootstrap of %s at snapshot %s: %s (%s)", identifier, plan.snapshot_id, plan.path, plan.reason)

    files_read = 0
    if plan.path == REUSE:
        manifest = plan.base
        if manifest.snapshot_id != plan.snapshot_id:  # only COMPACT snapshots since: same keys, newer snapshot
            manifest = replace(manifest, snapshot_id=plan.snapshot_id, origin=REUSE)
            write_manifest(table_uri, manifest)
    elif plan.path == CATCH_UP:
        files_read = len(plan.added_files)
        manifest = _catch_up(spark, table, plan, table_uri)
    else:
        snapshot = table.snapshot_manager().get_latest_snapshot()
        bucket_files = buckets_at(table, snapshot)
        files_read = sum(len(b.paths) for b in bucket_files)
        manifest = _rebuild(spark, table, plan.snapshot_id, bucket_files, shards, table_uri)
    crash_point("bootstrap.after_manifest")
    clean_up(table_uri)
    return {**result, "base_snapshot_id": plan.snapshot_id, "index_uri": table_uri, "keys": manifest.keys,
            "reused": plan.path == REUSE, "path": plan.path, "reason": plan.reason, "data_files_read": files_read}


def _no_index_needed(table) -> dict:
    """Fixed buckets hash the key, dynamic buckets keep Paimon's own HASH index, append tables have no key:
    the base snapshot is all the next task needs. Unsupported shapes are refused here, before any work."""
    mode = BucketMode.of(table)
    if mode is BucketMode.HASH_FIXED:
        check_fixed_table(table)
    elif mode is BucketMode.HASH_DYNAMIC:
        check_dynamic_table(table)
    elif mode is not BucketMode.APPEND:
        raise ValidationError(table.identifier.get_full_name(), f"bucket mode {mode.value} is not supported")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return {"base_snapshot_id": snapshot.id if snapshot else None, "index_uri": None, "keys": 0, "reused": True,
            "path": "not_needed", "reason": f"{mode.value} table needs no global index", "data_files_read": 0}


def _table_facts(table):
    return (list(table.primary_keys),
            [PyarrowFieldParser.from_paimon_type(f.type) for f in table.partition_keys_fields],
            IndexOptions.from_table_options(dict(table.table_schema.options)))


def _parallel_tasks(spark, n: int):
    return spark.range(n, numPartitions=max(1, min(n, spark.sparkContext.defaultParallelism * 2)))


ROWS_PER_REBUILD_TASK = 10_000_000  # bounds a task's memory: its keys are sorted in memory per shard


def _rebuild(spark, table, snapshot_id, bucket_files, shards: int, table_uri: str) -> IndexManifest:
    """One stage, no shuffle: each task reads some buckets and writes its part of every shard."""
    primary_keys, partition_types, _ = _table_facts(table)
    total_rows = sum(b.row_count for b in bucket_files)
    tasks = min(len(bucket_files), max(spark.sparkContext.defaultParallelism,
                                       -(-total_rows // ROWS_PER_REBUILD_TASK)))
    groups = _balance([(list(b.paths), b.partition, b.bucket) for b in bucket_files],
                      [b.row_count for b in bucket_files], tasks)
    store = storage.options()

    def build(batches):
        storage.configure(store)  # this worker reads data files and writes shards with the connection's credentials
        for batch in batches:
            for part in batch.column(0).to_pylist():
                with tempfile.TemporaryDirectory(prefix="paimon-bootstrap-") as tmp:
                    for p in base_parts(groups[part], primary_keys=primary_keys, partition_types=partition_types,
                                        shards=shards, local_dir=tmp, part=part):
                        file = publish_file(table_uri, snapshot_id, p.shard, f"base-{part}", p.path, p.keys)
                        crash_point("bootstrap.shard_file_published")
                        meta = ShardMeta(p.shard, [file], p.keys, p.bucket_counts)
                        yield pa.RecordBatch.from_pydict({"shard": pa.array([p.shard], pa.int32()),
                                                          "meta": [shard_meta_json(meta)]})

    parts = []
    if groups:
        rows = spark.range(len(groups), numPartitions=len(groups)).mapInArrow(build, SHARD_RESULT).collect()
        parts = sorted((shard_meta_from_dict(json.loads(r["meta"])) for r in rows),
                       key=lambda m: [f.path for f in m.files])
    crash_point("bootstrap.before_manifest")
    name = table.identifier.get_full_name()
    manifest = IndexManifest(name, snapshot_id, table.table_schema.id, shards, KEY_HASH_SCHEME,
                             merge_shard_parts(shards, parts), origin=REBUILD)
    write_manifest(table_uri, manifest)
    log.info("rebuilt the index of %s at snapshot %s: %s keys in %s tasks", name, snapshot_id, manifest.keys,
             len(groups))
    return manifest


def _balance(items: list, weights: list[int], n: int) -> list[list]:
    """``items`` in ``n`` groups of about equal weight (largest first, each to the lightest group)."""
    groups, loads = [[] for _ in range(n)], [0] * n
    for i in sorted(range(len(items)), key=lambda i: -weights[i]):
        lightest = loads.index(min(loads))
        groups[lightest].append(items[i])
        loads[lightest] += weights[i]
    return [g for g in groups if g]


def _catch_up(spark, table, plan, table_uri: str) -> IndexManifest:
    primary_keys, partition_types, options = _table_facts(table)
    base, shards, target = plan.base, plan.base.shards, plan.snapshot_id
    files = [(file_path(table, e), tuple(e.partition.values), e.bucket, sid) for sid, e in plan.added_files]
    route = routes(shards)
    store = storage.options()

    def read_files(batches):
        storage.configure(store)
        for batch in batches:
            for i in batch.column(0).to_pylist():
                path, partition, bucket, sid = files[i]
                changes = change_rows_of_file(path, partition, bucket, sid, primary_keys=primary_keys,
                                              partition_types=partition_types, shards=shards)
                shard_ids = changes.column("shard").to_numpy()
                yield from changes.append_column(ROUTE, route_column(shard_ids, route)).to_batches()

    def apply_one(rows: pa.Table) -> pa.Table:
        storage.configure(store)
        shard = rows.column("shard")[0].as_py()
        meta = base.shard(shard)
        with tempfile.TemporaryDirectory(prefix="paimon-catchup-") as tmp:
            with load_shard(table_uri, meta, tmp, options) as index:
                counts = BucketAssigner(shard, shards, 1, meta.bucket_counts)
                key_change = apply_changes(index, rows, counts)
                local, kind, entries = export_changes(index, meta, tmp)
            new_file = publish_file(table_uri, target, shard, kind, local, entries) if local else None
        crash_point("bootstrap.shard_file_published")
        advanced = advance(meta, new_file, kind, meta.keys + key_change, counts.to_dict())
        return pa.table({"shard": pa.array([shard], pa.int32()), "meta": [shard_meta_json(advanced)]})

    schema = f"{_spark_schema(CHANGE_ROWS)}, {ROUTE} int"
    with without_adaptive_execution(spark):
        rows = _parallel_tasks(spark, len(files)).mapInArrow(read_files, schema).repartition(shards, ROUTE)
        metas = _collect(rows.mapInArrow(per_group(apply_one, ["shard"]), SHARD_RESULT))
    manifest = replace(base, snapshot_id=target, origin=CATCH_UP,
                       shard_meta=[metas.get(m.shard, m) for m in base.shard_meta])
    crash_point("bootstrap.before_manifest")
    write_manifest(table_uri, manifest)
    return manifest


def _collect(df) -> dict[int, ShardMeta]:
    return {r["shard"]: shard_meta_from_dict(json.loads(r["meta"])) for r in df.collect()}


def _spark_schema(schema: pa.Schema) -> str:
    names = {pa.int32(): "int", pa.binary(): "binary", pa.string(): "string", pa.int64(): "long",
             pa.bool_(): "boolean"}
    return ", ".join(f"{f.name} {names[f.type]}" for f in schema)
