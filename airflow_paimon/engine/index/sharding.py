"""Which index shard a key belongs to: Spark's own hash partitioning of the primary-key columns.

``repartition(shards, *primary_keys)`` puts a row in partition ``pmod(hash(pk columns), shards)``, where
``hash`` is Spark's Murmur3Hash (seed 42, each column's hash seeding the next's). The shard of a key is
exactly that partition, so Spark routes a batch to its shards in the JVM, with no Python pass before the
shuffle; the bootstrap computes the same numbers here, in numpy, from the keys it reads out of data files.

Per Spark type (Murmur3HashFunction): BOOLEAN, TINYINT, SMALLINT, INT, DATE hash as an int; BIGINT and
TIMESTAMP (epoch microseconds) as a long; FLOAT/DOUBLE by their IEEE bits (-0.0 as 0); DECIMAL by its
unscaled long up to 18 digits, else by the bytes of Java's BigInteger.toByteArray(); STRING and BINARY by
their bytes (4-byte little-endian words, then each remaining byte on its own, sign-extended).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.codec.binary_row import copy_segments
from airflow_paimon.engine.codec.murmur import DEFAULT_SEED, fmix, mix, mix_words
from airflow_paimon.engine.codec.keys import binary_buffers
from airflow_paimon.engine.errors import ValidationError

# Recorded with every index so a change of scheme (key bytes, partition encoding, shard hash) forces a
# rebuild instead of a wrong lookup.
KEY_HASH_SCHEME = "pk-bytes-v1/partition-text-v2/spark-murmur3-pk-columns-seed42"


def shard_of(rows: pa.Table | pa.RecordBatch, primary_keys: list[str], shards: int) -> np.ndarray:
    """Shard id (0..shards-1) of each row: the partition Spark's repartition(shards, *primary_keys) gives it."""
    hashed = spark_hash([rows.column(k) for k in primary_keys]).astype(np.int64)
    return np.mod(hashed, shards).astype(np.int32)


def spark_hash(columns: list) -> np.ndarray:
    """Spark's ``hash(c1, c2, ...)`` of each row, as int32. A null leaves the running hash unchanged."""
    n = len(columns[0]) if columns else 0
    h = np.full(n, DEFAULT_SEED, dtype=np.uint32)
    for col in columns:
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        hashed = _hash_column(col, h)
        h = np.where(np.asarray(col.is_valid()), hashed, h) if col.null_count else hashed
    return h.view(np.int32)


def _hash_column(col: pa.Array, seed: np.ndarray) -> np.ndarray:
    t = col.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t) and t.bit_width <= 32:
        return _hash_int(_numbers(col, np.int32), seed)
    if pa.types.is_integer(t):
        return _hash_long(_numbers(col, np.int64), seed)
    if pa.types.is_date32(t):
        return _hash_int(_numbers(col.view(pa.int32()), np.int32), seed)
    if pa.types.is_timestamp(t):
        # Spark holds microseconds: finer values (TIMESTAMP(9) written by others) are truncated to them
        micros = col.cast(pa.timestamp("us", t.tz), safe=False)
        return _hash_long(_numbers(micros.view(pa.int64()), np.int64), seed)
    if pa.types.is_float32(t):
        return _hash_int(_ieee_bits(_numbers(col, np.float32), np.int32, 0x7FC00000), seed)
    if pa.types.is_float64(t):
        return _hash_long(_ieee_bits(_numbers(col, np.float64), np.int64, 0x7FF8000000000000), seed)
    if pa.types.is_decimal(t):
        return _hash_decimal(col, seed)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _hash_bytes(col.cast(pa.binary()), seed)
    # no table down here to name
    raise ValidationError("?", f"a primary key of type {t} cannot be sharded (Spark hash partitioning of it is not "
                               "mirrored)")


def _numbers(col: pa.Array, dtype) -> np.ndarray:
    if col.null_count:
        col = col.fill_null(False if pa.types.is_boolean(col.type) else 0)
    return np.asarray(col.to_numpy(zero_copy_only=False)).astype(dtype)


def _ieee_bits(values: np.ndarray, int_type, nan_bits: int) -> np.ndarray:
    """Java's floatToIntBits / doubleToLongBits (one NaN), with -0.0 as 0 as Spark hashes it."""
    bits = values.view(int_type).copy()
    bits[values == 0] = 0  # -0.0 == 0.0
    bits[np.isnan(values)] = nan_bits
    return bits


def _hash_int(values: np.ndarray, seed: np.ndarray) -> np.ndarray:
    return fmix(mix(seed, values.view(np.uint32)), np.full(len(values), 4))


def _hash_long(values: np.ndarray, seed: np.ndarray) -> np.ndarray:
    halves = np.ascontiguousarray(values, dtype="<i8").view("<u4").reshape(-1, 2)  # low word, then high
    return fmix(mix(mix(seed, halves[:, 0]), halves[:, 1]), np.full(len(values), 8))


def _hash_decimal(col: pa.Array, seed: np.ndarray) -> np.ndarray:
    """Decimal128 values: 16 little-endian two's-complement bytes of the unscaled value each."""
    raw = np.frombuffer(col.buffers()[1], dtype=np.uint8, count=16 * (len(col) + col.offset))
    raw = raw[16 * col.offset:].reshape(-1, 16)
    if col.type.precision <= 18:
        return _hash_long(np.ascontiguousarray(raw[:, :8]).view("<i8").ravel(), seed)
    # BigInteger.toByteArray(): big-endian, as few bytes as keep the sign
    big = raw[:, ::-1]
    sign = np.where(big[:, 0] >= 0x80, 0xFF, 0).astype(np.uint8)
    # a leading byte can go when it is all sign and the next byte's top bit says the same sign
    droppable = (big[:, :-1] == sign[:, None]) & ((big[:, 1:] >= 0x80) == (sign[:, None] == 0xFF))
    drop = np.argmin(np.hstack([droppable, np.zeros((len(big), 1), bool)]), axis=1)
    lengths = 16 - drop
    flat = np.ascontiguousarray(big).ravel()
    starts = np.arange(len(big), dtype=np.int64) * 16 + drop
    return _hash_segments(flat, starts, lengths.astype(np.int64), seed)


def _hash_bytes(col: pa.Array, seed: np.ndarray) -> np.ndarray:
    offsets, data = binary_buffers(col)
    return _hash_segments(data, offsets[:-1].astype(np.int64), np.diff(offsets).astype(np.int64), seed)


def _hash_segments(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Spark's hashUnsafeBytes of each ``data[starts[i]:+lengths[i]]``: whole words, then the tail bytes."""
    n = len(lengths)
    padded = (lengths + 3) // 4 * 4
    aligned_starts = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64) if n else padded
    aligned = np.zeros(int(padded.sum()) + 4, dtype=np.uint8)
    copy_segments(aligned, aligned_starts, data, starts, lengths)
    h = mix_words(seed, aligned.view("<u4"), aligned_starts // 4, lengths // 4)
    tail_start = aligned_starts + lengths // 4 * 4
    for t in range(3):
        rows = np.nonzero(lengths % 4 > t)[0]
        if len(rows):
            byte = aligned[tail_start[rows] + t].view(np.int8).astype(np.int32).view(np.uint32)
            h[rows] = mix(h[rows], byte)
    return fmix(h, lengths)
