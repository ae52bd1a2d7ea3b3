"""Fixed-bucket tables (``bucket`` = N > 0): a row's bucket is a pure function of its bucket key, as in
Java's FixedBucketRowKeyExtractor: ``Math.abs(bucketKey.hashCode() % N)`` for ``bucket-function.type``
default (the BinaryRow hash of murmur.py), ``Math.floorMod(key, N)`` for ``mod``. No key index is needed.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.assign.murmur import hash_codes

BUCKET_FUNCTION = "bucket-function.type"


def num_buckets(table) -> int:
    return int(table.table_schema.options.get("bucket", -1))


def bucket_keys(table) -> list[str]:
    """The bucket key: option ``bucket-key``, else the trimmed primary key (Java TableSchema.bucketKeys)."""
    return list(table.table_schema.bucket_keys)


def bucket_function(table) -> str:
    return str(table.table_schema.options.get(BUCKET_FUNCTION, "default")).strip().lower()


def check_fixed_table(table) -> None:
    """Refuse what Paimon refuses for a fixed-bucket write, before anything is read or written."""
    ident = table.identifier
    n = num_buckets(table)
    if n <= 0:
        raise ValueError(f"table {ident}: fixed-bucket write needs option bucket > 0, got {n}")
    keys = bucket_keys(table)
    if not keys:
        raise ValueError(f"table {ident}: fixed bucket needs a bucket key: set 'bucket-key' or a primary key")
    in_partition = sorted(set(keys) & set(table.partition_keys))
    if in_partition:
        raise ValueError(f"table {ident}: bucket-key {keys} must not contain partition fields {in_partition}")
    if table.primary_keys and not set(keys) <= set(table.primary_keys):
        raise ValueError(f"table {ident}: bucket-key {keys} must be a subset of primary key "
                         f"{list(table.primary_keys)}")
    fn = bucket_function(table)
    if fn not in ("default", "mod"):
        raise ValueError(f"table {ident}: {BUCKET_FUNCTION}={fn!r} is not supported (default, mod)")
    if fn == "mod":
        types = [f.type for f in table.table_schema.logical_bucket_key_fields]
        if len(keys) != 1 or str(types[0].type).split()[0].upper() not in ("INT", "INTEGER", "BIGINT"):
            raise ValueError(f"table {ident}: {BUCKET_FUNCTION}=mod needs exactly one INT or BIGINT bucket key, "
                             f"got {keys}")


def bucket_of_hash(hashes: np.ndarray, buckets: int) -> np.ndarray:
    """Java ``Math.abs(hash % buckets)`` for int hashes (``%`` truncates toward zero, like np.fmod)."""
    return np.abs(np.fmod(hashes.astype(np.int64), buckets)).astype(np.int32)


def fixed_buckets(table, rows: pa.Table | pa.RecordBatch, buckets: int | None = None) -> np.ndarray:
    """The bucket of every row of ``rows`` (which carry the bucket-key columns), as Paimon assigns it."""
    buckets = num_buckets(table) if buckets is None else buckets
    fields = table.table_schema.logical_bucket_key_fields
    columns = [rows.column(f.name) for f in fields]
    if bucket_function(table) == "mod":
        key = columns[0].combine_chunks() if isinstance(columns[0], pa.ChunkedArray) else columns[0]
        return np.mod(np.asarray(key.cast(pa.int64()).to_numpy(zero_copy_only=False)), buckets).astype(np.int32)
    return bucket_of_hash(hash_codes(columns, [f.type for f in fields]), buckets)


def base_snapshot_id(table) -> int | None:
    """bootstrap-index for a fixed-bucket table: nothing to build, only the snapshot the write starts from."""
    latest = table.snapshot_manager().get_latest_snapshot()
    return latest.id if latest is not None else None
