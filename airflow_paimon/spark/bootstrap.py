"""bootstrap-index on Spark. The engine decides the path (reuse / catch up / rebuild); Spark reads the
data files in parallel — one task per bucket (rebuild) or per added file (catch up) — shuffles the keys by
hash to their shard, and one task per shard writes or updates it. The driver publishes the manifest last."""
from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import replace

import pyarrow as pa

from airflow_paimon.engine.assign.buckets import BucketAssigner
from airflow_paimon.engine.assign.dynamic import check_dynamic_table
from airflow_paimon.engine.assign.fixed import check_fixed_table
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.bootstrap import (CATCH_UP, CHANGE_ROWS, INDEX_ROWS, REBUILD, REUSE, apply_changes,
                                             change_rows_of_file, index_rows_of_bucket, plan_bootstrap, write_shard)
from airflow_paimon.engine.index.keys import KEY_HASH_SCHEME
from airflow_paimon.engine.index.layout import (IndexManifest, ShardMeta, shard_meta_from_dict, table_index_uri,
                                                write_manifest)
from airflow_paimon.engine.index.shard import IndexOptions
from airflow_paimon.engine.index.store import advance, clean_up, export_changes, load_shard, publish_file
from airflow_paimon.engine.plan import buckets_at, file_path
from airflow_paimon.engine.table import TableSpec, get_or_create_table
from pypaimon.schema.data_types import PyarrowFieldParser

log = logging.getLogger(__name__)
SHARD_RESULT = "shard int, meta string"


def run_bootstrap(spark, spec: dict) -> dict:
    identifier, shards = spec["table"], int(spec["shards"])
    table_spec = TableSpec.from_dict(spec["table_spec"]) if spec.get("table_spec") else None
    table = get_or_create_table(spec["catalog_options"], identifier, table_spec)
    result = {"table": identifier, "shards": shards}
    if not table.primary_keys or table.bucket_mode().name != "CROSS_PARTITION":
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
    clean_up(table_uri)
    return {**result, "base_snapshot_id": plan.snapshot_id, "index_uri": table_uri, "keys": manifest.keys,
            "reused": plan.path == REUSE, "path": plan.path, "reason": plan.reason, "data_files_read": files_read}


def _no_index_needed(table) -> dict:
    """Fixed buckets hash the key, dynamic buckets keep Paimon's own HASH index, append tables have no key:
    the base snapshot is all the next task needs. Unsupported shapes are refused here, before any work."""
    mode = table.bucket_mode().name
    if table.primary_keys and mode == "HASH_FIXED":
        check_fixed_table(table)
    elif table.primary_keys and mode == "HASH_DYNAMIC":
        check_dynamic_table(table)
    elif table.primary_keys:
        raise ValidationError(table.identifier.get_full_name(), f"bucket mode {mode} is not supported")
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return {"base_snapshot_id": snapshot.id if snapshot else None, "index_uri": None, "keys": 0, "reused": True,
            "path": "not_needed", "reason": f"{mode} table needs no global index", "data_files_read": 0}


def _table_facts(table):
    return (list(table.primary_keys),
            [PyarrowFieldParser.from_paimon_type(f.type) for f in table.partition_keys_fields],
            IndexOptions.from_table_options(dict(table.table_schema.options)))


def _parallel_tasks(spark, n: int):
    return spark.range(n, numPartitions=max(1, min(n, spark.sparkContext.defaultParallelism * 2)))


def _rebuild(spark, table, snapshot_id, bucket_files, shards: int, table_uri: str) -> IndexManifest:
    primary_keys, partition_types, _ = _table_facts(table)
    buckets = [(list(b.paths), b.partition, b.bucket) for b in bucket_files]

    def read_buckets(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                paths, partition, bucket = buckets[i]
                yield from index_rows_of_bucket(paths, partition, bucket, primary_keys=primary_keys,
                                                partition_types=partition_types, shards=shards).to_batches()

    def write_one(rows: pa.Table) -> pa.Table:
        shard = rows.column("shard")[0].as_py()
        with tempfile.TemporaryDirectory(prefix="paimon-bootstrap-") as tmp:
            local, keys, counts = write_shard(shard, rows, tmp)
            files = [publish_file(table_uri, snapshot_id, shard, "base", local, keys)] if local else []
        return _shard_result(ShardMeta(shard, files, keys, counts))

    metas = {}
    if buckets:
        rows = _parallel_tasks(spark, len(buckets)).mapInArrow(read_buckets, _spark_schema(INDEX_ROWS))
        metas = _collect(rows.groupBy("shard").applyInArrow(write_one, SHARD_RESULT))
    name = table.identifier.get_full_name()
    manifest = IndexManifest(name, snapshot_id, table.table_schema.id, shards, KEY_HASH_SCHEME,
                             [metas.get(i, ShardMeta(i)) for i in range(shards)], origin=REBUILD)
    write_manifest(table_uri, manifest)
    log.info("rebuilt the index of %s at snapshot %s: %s keys", name, snapshot_id, manifest.keys)
    return manifest


def _catch_up(spark, table, plan, table_uri: str) -> IndexManifest:
    primary_keys, partition_types, options = _table_facts(table)
    base, shards, target = plan.base, plan.base.shards, plan.snapshot_id
    files = [(file_path(table, e), tuple(e.partition.values), e.bucket, sid) for sid, e in plan.added_files]

    def read_files(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                path, partition, bucket, sid = files[i]
                yield from change_rows_of_file(path, partition, bucket, sid, primary_keys=primary_keys,
                                               partition_types=partition_types, shards=shards).to_batches()

    def apply_one(rows: pa.Table) -> pa.Table:
        shard = rows.column("shard")[0].as_py()
        meta = base.shard(shard)
        with tempfile.TemporaryDirectory(prefix="paimon-catchup-") as tmp:
            with load_shard(table_uri, meta, tmp, options) as index:
                counts = BucketAssigner(shard, shards, 1, meta.bucket_counts)
                key_change = apply_changes(index, rows, counts)
                local, kind, entries = export_changes(index, meta, tmp)
            new_file = publish_file(table_uri, target, shard, kind, local, entries) if local else None
        return _shard_result(advance(meta, new_file, kind, meta.keys + key_change, counts.to_dict()))

    rows = _parallel_tasks(spark, len(files)).mapInArrow(read_files, _spark_schema(CHANGE_ROWS))
    metas = _collect(rows.groupBy("shard").applyInArrow(apply_one, SHARD_RESULT))
    manifest = replace(base, snapshot_id=target, origin=CATCH_UP,
                       shard_meta=[metas.get(m.shard, m) for m in base.shard_meta])
    write_manifest(table_uri, manifest)
    return manifest


def _shard_result(meta: ShardMeta) -> pa.Table:
    from dataclasses import asdict
    return pa.table({"shard": pa.array([meta.shard], pa.int32()), "meta": pa.array([json.dumps(asdict(meta))])})


def _collect(df) -> dict[int, ShardMeta]:
    return {r["shard"]: shard_meta_from_dict(json.loads(r["meta"])) for r in df.collect()}


def _spark_schema(schema: pa.Schema) -> str:
    names = {pa.int32(): "int", pa.binary(): "binary", pa.string(): "string", pa.int64(): "long",
             pa.bool_(): "boolean"}
    return ", ".join(f"{f.name} {names[f.type]}" for f in schema)
