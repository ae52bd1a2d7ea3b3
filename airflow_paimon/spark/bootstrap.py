"""bootstrap-index on Spark: one task per bucket reads its live keys; a shuffle by key hash gathers each
shard; one task per shard writes its SST. The driver writes the manifest last."""
from __future__ import annotations

import json
import logging
import tempfile

import pyarrow as pa

from airflow_paimon.engine import storage
from airflow_paimon.engine.bootstrap import INDEX_ROWS, index_rows_of_bucket, write_shard
from airflow_paimon.engine.index.keys import KEY_HASH_SCHEME
from airflow_paimon.engine.index.layout import (IndexManifest, ShardMeta, read_manifest, snapshot_index_uri, usable,
                                                write_manifest)
from airflow_paimon.engine.plan import buckets_at, latest_snapshot
from airflow_paimon.engine.table import TableSpec, get_or_create_table
from pypaimon.schema.data_types import PyarrowFieldParser

log = logging.getLogger(__name__)
SHARD_META = "shard int, file string, keys long, bucket_counts string"


def run_bootstrap(spark, spec: dict) -> dict:
    identifier, shards = spec["table"], int(spec["shards"])
    table_spec = TableSpec.from_dict(spec["table_spec"]) if spec.get("table_spec") else None
    table = get_or_create_table(spec["catalog_options"], identifier, table_spec)
    snap = latest_snapshot(table)
    sid = snap.id if snap else None
    index_uri = snapshot_index_uri(spec["index_root"], identifier, sid)
    result = {"table": identifier, "base_snapshot_id": sid, "index_uri": index_uri, "shards": shards}

    existing = read_manifest(index_uri)
    if usable(existing, sid, table.table_schema.id, shards):
        log.info("index of %s at snapshot %s already published; reusing it", identifier, sid)
        return {**result, "keys": existing.keys, "reused": True, "data_files_read": 0}

    bucket_files = buckets_at(table, snap)
    metas = _build_shards(spark, table, bucket_files, shards, index_uri) if bucket_files else {}
    shard_meta = [metas.get(i, ShardMeta(i, None, 0, {})) for i in range(shards)]
    manifest = IndexManifest(identifier, sid, table.table_schema.id, shards, KEY_HASH_SCHEME, shard_meta)
    write_manifest(index_uri, manifest)
    files = sum(len(b.paths) for b in bucket_files)
    log.info("bootstrapped %s keys of %s at snapshot %s from %s files", manifest.keys, identifier, sid, files)
    return {**result, "keys": manifest.keys, "reused": False, "data_files_read": files}


def _build_shards(spark, table, bucket_files, shards: int, index_uri: str) -> dict[int, ShardMeta]:
    primary_keys = list(table.primary_keys)
    partition_types = [PyarrowFieldParser.from_paimon_type(f.type) for f in table.partition_keys_fields]
    buckets = [(list(b.paths), b.partition, b.bucket) for b in bucket_files]

    def read_buckets(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                paths, partition, bucket = buckets[i]
                rows = index_rows_of_bucket(paths, partition, bucket, primary_keys=primary_keys,
                                            partition_types=partition_types, shards=shards)
                yield from rows.to_batches()

    def write_one(rows: pa.Table) -> pa.Table:
        shard = rows.column("shard")[0].as_py()
        with tempfile.TemporaryDirectory(prefix="paimon-bootstrap-") as tmp:
            local, meta = write_shard(shard, rows, tmp)
            if local:
                storage.upload(local, storage.join(index_uri, meta.file))
        return pa.table({"shard": pa.array([meta.shard], pa.int32()), "file": pa.array([meta.file], pa.string()),
                         "keys": pa.array([meta.keys], pa.int64()),
                         "bucket_counts": pa.array([json.dumps(meta.bucket_counts)], pa.string())})

    tasks = spark.range(len(buckets), numPartitions=max(1, min(len(buckets), spark.sparkContext.defaultParallelism * 2)))
    index_rows = tasks.mapInArrow(read_buckets, _spark_schema(INDEX_ROWS))
    rows = index_rows.groupBy("shard").applyInArrow(write_one, SHARD_META).collect()
    return {r["shard"]: ShardMeta(r["shard"], r["file"], r["keys"], json.loads(r["bucket_counts"])) for r in rows}


def _spark_schema(schema: pa.Schema) -> str:
    names = {pa.int32(): "int", pa.binary(): "binary", pa.string(): "string", pa.int64(): "long"}
    return ", ".join(f"{f.name} {names[f.type]}" for f in schema)
