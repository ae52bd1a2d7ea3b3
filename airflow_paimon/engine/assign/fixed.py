"""Fixed-bucket tables (``bucket`` = N > 0): a row's bucket is a pure function of its bucket key, as in
Java's FixedBucketRowKeyExtractor: ``Math.abs(bucketKey.hashCode() % N)`` for ``bucket-function.type``
default (the BinaryRow hash of murmur.py), ``Math.floorMod(key, N)`` for ``mod``. No key index is needed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.codec.murmur import hash_codes
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.options.checks import check_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

def num_buckets(table: FileStoreTable) -> int:
    return TableOptions.of(table).buckets.bucket


def bucket_keys(table: FileStoreTable) -> list[str]:
    """The bucket key: option ``bucket-key``, else the trimmed primary key (Java TableSchema.bucketKeys)."""
    return list(table.table_schema.bucket_keys)


def bucket_function(table: FileStoreTable) -> str:
    return TableOptions.of(table).buckets.function


def check_fixed_table(table: FileStoreTable) -> None:
    """Refuse what Paimon refuses for a fixed-bucket write (bucket, bucket-key and bucket-function.type are
    checked with every table option: engine/options/checks.py), before anything is read or written."""
    n = num_buckets(table)
    if n <= 0:
        raise ValidationError(table.identifier.get_full_name(), "a fixed-bucket write needs bucket > 0",
                              option="bucket", value=n)
    check_table(table)


def bucket_of_hash(hashes: np.ndarray, buckets: int) -> np.ndarray:
    """Java ``Math.abs(hash % buckets)`` for int hashes (``%`` truncates toward zero, like np.fmod)."""
    return np.abs(np.fmod(hashes.astype(np.int64), buckets)).astype(np.int32)


def fixed_buckets(table: FileStoreTable, rows: pa.Table | pa.RecordBatch, buckets: int | None = None) -> np.ndarray:
    """The bucket of every row of ``rows`` (which carry the bucket-key columns), as Paimon assigns it."""
    buckets = num_buckets(table) if buckets is None else buckets
    fields = table.table_schema.logical_bucket_key_fields
    columns = [rows.column(f.name) for f in fields]
    if bucket_function(table) == "mod":
        key = columns[0].combine_chunks() if isinstance(columns[0], pa.ChunkedArray) else columns[0]
        return np.mod(np.asarray(key.cast(pa.int64()).to_numpy(zero_copy_only=False)), buckets).astype(np.int32)
    return bucket_of_hash(hash_codes(columns, [f.type for f in fields]), buckets)


def base_snapshot_id(table: FileStoreTable) -> int | None:
    """bootstrap-index for a fixed-bucket table: nothing to build, only the snapshot the write starts from."""
    latest = table.snapshot_manager().get_latest_snapshot()
    return latest.id if latest is not None else None
