"""Bootstrap of the global key index, as Paimon's GlobalIndexAssigner bootstraps: every live key of the
table at snapshot S with its (partition, bucket), hashed into shards, each shard one sorted SST file.

The two steps here are what one Spark task does: read one bucket's keys; write one shard.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.buckets import count_buckets
from airflow_paimon.engine.index.keys import encode_keys, encode_partition_values, shard_of
from airflow_paimon.engine.index.layout import ShardMeta, shard_file_name
from airflow_paimon.engine.index.shard import decode_values, encode_values, write_sst
from airflow_paimon.engine.plan import read_live_keys

INDEX_ROWS = pa.schema([("shard", pa.int32()), ("key", pa.binary()), ("value", pa.binary())])


def index_rows_of_bucket(paths: list[str], partition: tuple, bucket: int, *, primary_keys: list[str],
                         partition_types: list[pa.DataType], shards: int) -> pa.Table:
    """(shard, key, value) for every live key of one (partition, bucket)."""
    keys = encode_keys(read_live_keys(paths, primary_keys), primary_keys)
    n = len(keys)
    part = encode_partition_values(partition, partition_types)
    values = encode_values(np.full(n, bucket, dtype=np.int32), pa.array([part] * n, pa.string()))
    return pa.table([pa.array(shard_of(keys, shards), pa.int32()), keys, values], schema=INDEX_ROWS)


def write_shard(shard: int, rows: pa.Table, local_dir: str) -> tuple[str | None, ShardMeta]:
    """Write one shard's (key, value) rows as an SST file in ``local_dir``; returns (local path, meta)."""
    keys = rows.column("key").combine_chunks()
    values = rows.column("value").combine_chunks()
    if len(keys) != len(pc.unique(keys)):
        raise ValueError(f"index shard {shard}: a key lives in more than one bucket; the table is inconsistent")
    path = os.path.join(local_dir, shard_file_name(shard))
    count = write_sst(keys, values, path)
    buckets, partitions = decode_values(values)
    meta = ShardMeta(shard=shard, file=shard_file_name(shard) if count else None, keys=count,
                     bucket_counts=count_buckets(partitions, buckets))
    return (path if count else None), meta
