"""Key codec: primary keys and partitions to bytes, keys in RocksDB's order. Columnar throughout.

A primary key becomes one binary value whose byte order is the key order for integer-like columns
(big-endian, sign bit flipped); variable-length columns carry a 4-byte length prefix when the key has
more than one column, so two different keys never encode alike. A partition becomes a short string of
its values, decoded back to typed values only once per distinct partition; that encoding is injective too
(a null is its own marker, separators inside values are escaped), so no two partitions share a string.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


_SEP = "\x1f"    # between partition values
_NULL = "\x00"   # a null partition value: never the encoding of a string, which starts with _VALUE
_VALUE = "="     # prefix of every non-null partition value
_ESC = "\x1e"    # inside a value: _ESC _ESC is _ESC itself, _ESC "_" is _SEP
_UNESCAPE = re.compile(_ESC + "(.)", re.S)


def _fixed_width(values: np.ndarray, width: int) -> pa.Array:
    buf = pa.py_buffer(np.ascontiguousarray(values).tobytes())
    return pa.Array.from_buffers(pa.binary(width), len(values), [None, buf]).cast(pa.binary())


def _ordered_int_bytes(col: pa.Array) -> pa.Array:
    as_int = np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    flipped = as_int.view(np.uint64) ^ np.uint64(1 << 63)
    return _fixed_width(flipped.astype(">u8"), 8)


def _column_bytes(col: pa.Array, prefix_length: bool) -> pa.Array:
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return _ordered_int_bytes(col)
    if pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return _ordered_int_bytes(col.cast(pa.int64()) if pa.types.is_timestamp(t)
                                  else col.view(pa.int32() if t.bit_width == 32 else pa.int64()))
    if pa.types.is_floating(t):
        # IEEE total order: flip every bit of negatives, only the sign bit of the rest
        bits = np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64).view(np.uint64)
        sign = np.uint64(1 << 63)
        return _fixed_width(np.where(bits & sign, ~bits, bits ^ sign).astype(">u8"), 8)
    if pa.types.is_decimal(t):
        col = col.cast(pa.string())
    raw = col.cast(pa.binary()) if (pa.types.is_string(t) or pa.types.is_large_string(t)
                                    or pa.types.is_decimal(t)) else col.cast(pa.binary())
    if not prefix_length:
        return raw
    lengths = np.asarray(pc.binary_length(raw).to_numpy(zero_copy_only=False), dtype=">u4")
    return pc.binary_join_element_wise(_fixed_width(lengths, 4), raw, b"")


def encode_keys(table: pa.Table | pa.RecordBatch, key_fields: list[str]) -> pa.Array:
    """One binary value per row for the primary key ``key_fields`` (no nulls allowed)."""
    cols = [_as_array(table.column(k)) for k in key_fields]
    if len(cols) == 1:
        return _column_bytes(cols[0], prefix_length=False)
    parts = [_column_bytes(c, prefix_length=True) for c in cols]
    return pc.binary_join_element_wise(*parts, b"")


def binary_buffers(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of binary keys, without copying."""
    keys = _as_array(keys).cast(pa.binary())
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=len(keys) + 1, offset=keys.offset * 4)
    data = keys.buffers()[2]
    return offsets, (np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8))


def _fixed_width_view(keys: pa.Array) -> np.ndarray | None:
    """The keys as an (n, width) uint8 matrix, without copying, when all have one width (integer-like keys
    always do); None for keys of varying width."""
    offsets, data = binary_buffers(keys)
    widths = np.diff(offsets)
    if len(widths) == 0 or widths[0] == 0 or (widths != widths[0]).any():
        return None
    return data[offsets[0]:offsets[-1]].reshape(len(widths), int(widths[0]))


@dataclass
class SortedKeys:
    order: np.ndarray    # indices that sort the keys by their bytes (RocksDB's order)
    duplicated: bool     # whether a key occurs twice
    ordered: np.ndarray | pa.Array  # the keys in that order: an (n, width) uint8 matrix, or a binary Arrow array

    @property
    def keys(self) -> list[bytes]:
        """All keys in order, the form RocksDB calls take."""
        return _as_bytes(self.ordered)

    def chunks(self, size: int) -> Iterator[tuple[slice, list[bytes]]]:
        """(positions, keys) in order, ``size`` at a time: millions of keys never all Python objects at once
        (a rebuild task's 2.5M-key shard: ≈140 MB of bytes objects and list less at its peak)."""
        for start in range(0, len(self.order), size):
            where = slice(start, min(start + size, len(self.order)))
            yield where, _as_bytes(self.ordered[where])


def _as_bytes(ordered) -> list[bytes]:
    if isinstance(ordered, np.ndarray):
        return np.ascontiguousarray(ordered).view(f"V{ordered.shape[1]}").ravel().tolist()
    return ordered.to_pylist()


def sort_keys(keys: pa.Array) -> SortedKeys:
    """The keys in byte order. Fixed-width keys sort as big-endian 64-bit words in numpy, several times
    faster than Arrow's sort of binary values."""
    matrix = _fixed_width_view(keys)
    if matrix is None:
        keys = _as_array(keys)
        order = np.asarray(pc.sort_indices(keys).to_numpy(), dtype=np.int64)
        ordered = keys.take(pa.array(order))
        duplicated = len(ordered) > 1 and pc.any(pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1))).as_py()
        return SortedKeys(order, bool(duplicated), ordered)
    words = _big_endian_words(matrix)
    order = np.argsort(words[:, 0], kind="stable") if words.shape[1] == 1 else np.lexsort(words.T[::-1])
    ordered = matrix[order]
    duplicated = bool((ordered[1:] == ordered[:-1]).all(axis=1).any())
    return SortedKeys(order, duplicated, ordered)


def _big_endian_words(matrix: np.ndarray) -> np.ndarray:
    n, width = matrix.shape
    if width % 8:
        matrix = np.hstack([matrix, np.zeros((n, 8 - width % 8), dtype=np.uint8)])
    return np.ascontiguousarray(matrix).view(">u8").astype(np.uint64)


def encode_partitions(table: pa.Table | pa.RecordBatch, partition_fields: list[str]) -> pa.Array:
    """One string per row naming its partition; '' for an unpartitioned table."""
    n = table.num_rows
    if not partition_fields:
        return pa.array([""] * n, pa.string()) if n else pa.array([], pa.string())
    parts = []
    for name in partition_fields:
        col = _as_array(table.column(name))
        text = col.cast(pa.string()) if not pa.types.is_string(col.type) else col
        text = pc.replace_substring(pc.replace_substring(text, _ESC, _ESC + _ESC), _SEP, _ESC + "_")
        parts.append(pc.fill_null(pc.binary_join_element_wise(_VALUE, text, ""), _NULL))
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, _SEP)


def decode_partition(encoded: str, partition_types: list[pa.DataType]) -> tuple:
    """The typed partition values behind one encoded partition string."""
    if not partition_types:
        return ()
    texts = encoded.split(_SEP)
    return tuple(None if s == _NULL else pa.array([_unescape(s[len(_VALUE):])], pa.string()).cast(t)[0].as_py()
                 for s, t in zip(texts, partition_types))


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(lambda m: _SEP if m.group(1) == "_" else m.group(1), text)


def encode_partition_values(values: tuple, partition_types: list[pa.DataType]) -> str:
    """The encoded string of one partition given as Python values (e.g. from a manifest entry)."""
    if not partition_types:
        return ""
    batch = pa.table({str(i): pa.array([v], t) for i, (v, t) in enumerate(zip(values, partition_types))})
    return encode_partitions(batch, [str(i) for i in range(len(partition_types))])[0].as_py()


def _as_array(col) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
