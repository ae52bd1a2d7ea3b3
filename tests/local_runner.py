"""Runs the engine's task functions in-process (a full-rebuild bootstrap, assign per shard, write per
bucket, commit + index publish), the way the Spark jobs distribute them — for fast engine tests. The
Spark glue itself is tested in tests/spark and tests/dag."""
from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.assigner import BUCKET, KEY, KIND, ORDER
from airflow_paimon.engine.assign.task import assign_task
from airflow_paimon.engine.bootstrap import base_parts
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.staging import Staged, stage
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.index.keys import encode_keys, encode_partition_values
from airflow_paimon.engine.index.sharding import KEY_HASH_SCHEME, shard_of
from airflow_paimon.engine.index.layout import (IndexManifest, ShardMeta, merge_shard_parts, read_manifest,
                                                table_index_uri, write_manifest)
from airflow_paimon.engine.index.store import publish_file
from airflow_paimon.engine.plan import buckets_at, latest_snapshot
from airflow_paimon.engine.table import get_table
from airflow_paimon.engine.write.task import write_task
from airflow_paimon.spark.commit import run_commit


def bootstrap(catalog_options, identifier, index_root, shards) -> WriteContext:
    table = get_table(catalog_options, identifier)
    snap = latest_snapshot(table)
    sid = snap.id if snap else None
    table_uri = table_index_uri(index_root, identifier)
    ctx = WriteContext(catalog_options, identifier, sid, table_uri, shards)
    ptypes = ctx.partition_types
    ctx.max_sequence_numbers = {(encode_partition_values(b.partition, ptypes), b.bucket): b.max_sequence_number
                                for b in buckets_at(table, snap)}
    if read_manifest(table_uri, sid) is not None:
        return ctx
    buckets = [(list(b.paths), b.partition, b.bucket) for b in buckets_at(table, snap)]
    with tempfile.TemporaryDirectory() as tmp:
        parts = [ShardMeta(p.shard, [publish_file(table_uri, sid, p.shard, "base-0", p.path, p.keys)], p.keys,
                           p.bucket_counts)
                 for p in base_parts(buckets, primary_keys=ctx.primary_keys, partition_types=ptypes,
                                     shards=shards, local_dir=tmp, part=0)]
    metas = merge_shard_parts(shards, parts)
    write_manifest(table_uri, IndexManifest(identifier, sid, table.table_schema.id, shards, KEY_HASH_SCHEME, metas))
    return ctx


def stage_run(ctx: WriteContext, source: pa.Table, run_id: str = "run", kinds=None, write_mode: str = "upsert") -> dict:
    """The assign-and-write task: index changes and commit messages staged for the commit task; returns the
    commit task's spec."""
    table = ctx.table()
    ident = CommitIdentity.for_run("test", run_id, ctx.identifier)
    staging_root = ctx.index_uri.rsplit("/", 2)[0] + "/staging"
    ctx.staging_uri = storage.join(staging_root, ctx.identifier, ident.commit_user)
    storage.delete_dir(ctx.staging_uri)  # a retried attempt starts clean, as the Spark job does
    keys = encode_keys(source, ctx.primary_keys)
    source = source.append_column(KEY, keys).append_column(ORDER, pa.array(np.arange(source.num_rows), pa.int64()))
    source = source.append_column(KIND, pa.array(np.zeros(source.num_rows, np.int8) if kinds is None else kinds,
                                                  pa.int8()))
    shard = shard_of(source, ctx.primary_keys, ctx.shards)
    assigned = [assign_task(ctx, s, source.filter(pa.array(shard == s)))[0] for s in range(ctx.shards)
                if (shard == s).any()]
    allrows = pa.concat_tables(assigned)
    messages = []
    for group in allrows.group_by(ctx.partition_keys + [BUCKET]).aggregate([]).to_pylist():
        mask = None
        for k, v in group.items():
            m = pc.equal(allrows.column(k), v) if v is not None else pc.is_null(allrows.column(k))
            mask = m if mask is None else pc.and_(mask, m)
        messages.append(write_task(ctx, allrows.filter(mask))[0])
    stage(table, ctx.staging_uri, Staged(ctx.identifier, ctx.base_snapshot_id, ident.commit_user,
                                         ident.commit_identifier, [],
                                         extra={"index_uri": ctx.index_uri, "write_mode": write_mode}), messages)
    return {"table": ctx.identifier, "catalog_options": ctx.catalog_options, "staging_uri": ctx.staging_uri,
            "commit_user": ident.commit_user, "commit_identifier": ident.commit_identifier,
            "base_snapshot_id": ctx.base_snapshot_id}


def upsert(ctx: WriteContext, source: pa.Table, run_id: str = "run", kinds=None, write_mode: str = "upsert"):
    """Stage and commit one run (the commit task of the Spark jobs, run in-process); (snapshot id, already)."""
    result = run_commit(stage_run(ctx, source, run_id, kinds, write_mode))
    return result["snapshot_id"], result["already_committed"]
