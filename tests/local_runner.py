"""Runs the engine's task functions in-process, the way the Spark jobs distribute them — for engine tests."""
from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.assigner import BUCKET, KEY, ORDER
from airflow_paimon.engine.assign.task import assign_task
from airflow_paimon.engine.bootstrap import index_rows_of_bucket, write_shard
from airflow_paimon.engine.commit.committer import commit_once
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.index.keys import encode_keys, encode_partition_values, shard_of
from airflow_paimon.engine.index.layout import IndexManifest, KEY_HASH_SCHEME, snapshot_index_uri, write_manifest
from airflow_paimon.engine.plan import buckets_at, latest_snapshot
from airflow_paimon.engine.table import get_table
from airflow_paimon.engine.write.task import write_task


def bootstrap(catalog_options, identifier, index_root, shards) -> WriteContext:
    table = get_table(catalog_options, identifier)
    snap = latest_snapshot(table)
    sid = snap.id if snap else None
    ctx = WriteContext(catalog_options, identifier, sid, snapshot_index_uri(index_root, identifier, sid), shards)
    ptypes = ctx.partition_types
    parts, max_seqs = [], {}
    for bf in buckets_at(table, snap):
        parts.append(index_rows_of_bucket(list(bf.paths), bf.partition, bf.bucket, primary_keys=ctx.primary_keys,
                                          partition_types=ptypes, shards=shards))
        max_seqs[(encode_partition_values(bf.partition, ptypes), bf.bucket)] = bf.max_sequence_number
    ctx.max_sequence_numbers = max_seqs
    rows = pa.concat_tables(parts) if parts else pa.table({"shard": pa.array([], pa.int32()),
                                                           "key": pa.array([], pa.binary()),
                                                           "value": pa.array([], pa.binary())})
    metas = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in range(shards):
            local, meta = write_shard(s, rows.filter(pc.equal(rows.column("shard"), s)), tmp)
            if local:
                storage.upload(local, storage.join(ctx.index_uri, meta.file))
            metas.append(meta)
    write_manifest(ctx.index_uri, IndexManifest(identifier, sid, table.table_schema.id, shards, KEY_HASH_SCHEME, metas))
    return ctx


def upsert(ctx: WriteContext, source: pa.Table, run_id: str = "run"):
    table = ctx.table()
    keys = encode_keys(source, ctx.primary_keys)
    source = source.append_column(KEY, keys).append_column(ORDER, pa.array(np.arange(source.num_rows), pa.int64()))
    shard = shard_of(keys, ctx.shards)
    assigned = []
    for s in range(ctx.shards):
        rows, _ = assign_task(ctx, s, source.filter(pa.array(shard == s)))
        assigned.append(rows)
    allrows = pa.concat_tables(assigned)
    groups = allrows.group_by(ctx.partition_keys + [BUCKET]).aggregate([])
    messages = []
    from airflow_paimon.engine.commit.staging import decode_message
    for g in groups.to_pylist():
        mask = None
        for k, v in g.items():
            m = pc.equal(allrows.column(k), v) if v is not None else pc.is_null(allrows.column(k))
            mask = m if mask is None else pc.and_(mask, m)
        data, _ = write_task(ctx, allrows.filter(mask))
        messages.append(decode_message(table, data))
    ident = CommitIdentity.for_run("test", run_id, ctx.identifier)
    return commit_once(table, messages, ident.commit_user, ident.commit_identifier, ctx.base_snapshot_id)
