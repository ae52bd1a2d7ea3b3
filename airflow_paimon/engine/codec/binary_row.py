"""Paimon's BinaryRow bytes for a batch of rows, built columnar with numpy (no per-row Python).

Layout (Java BinaryRow / BinaryRowWriter, pypaimon GenericRowSerializer): a header of
``((arity + 63 + 8) // 64) * 8`` bytes — byte 0 the RowKind (INSERT = 0 for keys), then one null bit per
field starting at bit 8 — then one little-endian 8-byte slot per field, then the variable part. A value of
at most 7 bytes (STRING / BYTES) lives in its slot with ``0x80 | length`` in the slot's last byte; a longer
one goes to the variable part (padded to 8 bytes) and the slot holds ``offset << 32 | length``, the offset
counted from the row start. DECIMAL with precision > 18 takes 16 variable bytes (Java's
``BigInteger.toByteArray``), TIMESTAMP with precision > 3 takes 8 (epoch millis) with
``offset << 32 | nanoOfMillisecond`` in the slot.

Supported: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP[_LTZ](p), DECIMAL(p, s),
CHAR/VARCHAR/STRING, BINARY/VARBINARY/BYTES. Anything else raises, naming the type.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.errors import InternalError

HEADER_BITS = 8
MAX_FIX_PART_DATA_SIZE = 7
_STRING = ("CHAR", "VARCHAR", "STRING")
_BINARY = ("BINARY", "VARBINARY", "BYTES")


@dataclass(frozen=True)
class RowBytes:
    """``n`` BinaryRows laid end to end: row i is ``data[starts[i] : starts[i] + lengths[i]]``."""

    data: np.ndarray      # uint8; every row starts on an 8-byte boundary
    starts: np.ndarray    # int64
    lengths: np.ndarray   # int64, multiples of 8

    def row(self, i: int) -> bytes:
        return self.data[self.starts[i]:self.starts[i] + self.lengths[i]].tobytes()


@dataclass
class _Var:
    """One field's variable-part values: ``length`` payload bytes per row at ``src[src_start:]``."""

    padded: np.ndarray     # int64 bytes taken in the variable part (0: nothing there)
    low: np.ndarray        # int64 low 32 bits of the slot: the length, or nanoOfMillisecond
    src: np.ndarray        # uint8 payload buffer
    src_start: np.ndarray  # int64
    length: np.ndarray     # int64 payload bytes to copy


def header_size(arity: int) -> int:
    return ((arity + 63 + HEADER_BITS) // 64) * 8


def type_root(paimon_type) -> tuple[str, int, int]:
    """(root name, precision, scale) of a Paimon type (a pypaimon DataType or its SQL string)."""
    text = str(getattr(paimon_type, "type", paimon_type)).upper().replace(" NOT NULL", "").strip()
    ltz = "WITH LOCAL TIME ZONE" in text or text.startswith("TIMESTAMP_LTZ")
    m = re.match(r"([A-Z_]+(?: [A-Z]+)*?)\s*(?:\((\d+)(?:\s*,\s*(\d+))?\))?(?: WITH(?:OUT)? (?:LOCAL )?TIME ZONE)?$",
                 text)
    if not m:
        raise TypeError(f"unsupported Paimon type for BinaryRow: {text}")
    name, p, s = m.group(1), m.group(2), m.group(3)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ") or ltz:
        return "TIMESTAMP", int(p) if p is not None else 6, 0
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        return "DECIMAL", int(p) if p is not None else 10, int(s) if s is not None else 0
    if name == "TIME":
        return "TIME", int(p) if p is not None else 0, 0
    return {"INTEGER": "INT", "BOOL": "BOOLEAN", "REAL": "FLOAT"}.get(name, name), int(p or 0), int(s or 0)


def binary_rows(columns: list, paimon_types: list) -> RowBytes:
    """The BinaryRow bytes (RowKind INSERT) of each row of ``columns`` typed as ``paimon_types``."""
    if len(columns) != len(paimon_types):
        raise InternalError("one Paimon type per column")
    cols = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    n = len(cols[0]) if cols else 0
    arity = len(cols)
    hb = header_size(arity)
    width = hb + 8 * arity
    fixed = np.zeros((n, width), dtype=np.uint8)
    var_fields: list[tuple[int, _Var]] = []
    for i, (col, ptype) in enumerate(zip(cols, paimon_types)):
        slot = slice(hb + 8 * i, hb + 8 * i + 8)
        var = _write_field(fixed, slot, col, type_root(ptype))
        if var is not None:
            var_fields.append((i, var))
        if col.null_count:
            bit = i + HEADER_BITS
            nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False))
            fixed[nulls, bit // 8] |= np.uint8(1 << (bit % 8))
            fixed[nulls, slot] = 0
    if not var_fields:
        return RowBytes(fixed.reshape(-1), np.arange(n, dtype=np.int64) * width,
                        np.full(n, width, dtype=np.int64))
    return _with_variable_part(fixed, hb, var_fields)


def _with_variable_part(fixed: np.ndarray, hb: int, var_fields) -> RowBytes:
    """Lay the variable parts after each row's fixed part and point the slots at them."""
    n, width = fixed.shape
    offset = np.full(n, width, dtype=np.int64)  # each row's next free variable-part offset
    placed = []
    for i, var in var_fields:
        has = var.padded > 0
        slot_value = (offset << 32) | var.low
        fixed[has, hb + 8 * i: hb + 8 * i + 8] = slot_value[has].astype("<i8").view(np.uint8).reshape(-1, 8)
        placed.append((offset.copy(), var))
        offset += var.padded
    lengths = offset
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    data = np.zeros(int(lengths.sum()), dtype=np.uint8)
    data[starts[:, None] + np.arange(width)] = fixed
    for row_offset, var in placed:
        copy_segments(data, starts + row_offset, var.src, var.src_start, var.length)
    return RowBytes(data, starts, lengths)


def copy_segments(dst: np.ndarray, dst_starts: np.ndarray, src: np.ndarray, src_starts: np.ndarray,
                  lengths: np.ndarray) -> None:
    """``dst[dst_starts[i]:+lengths[i]] = src[src_starts[i]:+lengths[i]]`` for every i, in one gather."""
    lengths = lengths.astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return
    keep = lengths > 0
    lengths, dst_starts, src_starts = lengths[keep], dst_starts[keep], src_starts[keep]
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    dst[np.repeat(dst_starts, lengths) + within] = src[np.repeat(src_starts, lengths) + within]


def _le(values: np.ndarray, dtype: str, n: int) -> np.ndarray:
    """Little-endian bytes of ``values`` as an (n, itemsize) uint8 matrix."""
    return np.ascontiguousarray(values, dtype=dtype).view(np.uint8).reshape(n, -1)


def _numbers(col: pa.Array, arrow_type: pa.DataType, dtype) -> np.ndarray:
    col = col.cast(arrow_type) if col.type != arrow_type else col
    if col.null_count:
        col = col.fill_null(pa.scalar(0, arrow_type) if not pa.types.is_boolean(arrow_type) else False)
    return np.asarray(col.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)


def _write_field(fixed: np.ndarray, slot: slice, col: pa.Array, root: tuple[str, int, int]) -> _Var | None:
    name, precision, scale = root
    n = len(col)
    start = slot.start
    if name == "BOOLEAN":
        fixed[:, start] = _numbers(col, pa.bool_(), np.uint8)
    elif name == "TINYINT":
        fixed[:, start] = _numbers(col, pa.int8(), np.int8).view(np.uint8)
    elif name == "SMALLINT":
        fixed[:, start:start + 2] = _le(_numbers(col, pa.int16(), np.int16), "<i2", n)
    elif name == "INT":
        fixed[:, start:start + 4] = _le(_numbers(col, pa.int32(), np.int32), "<i4", n)
    elif name == "BIGINT":
        fixed[:, slot] = _le(_numbers(col, pa.int64(), np.int64), "<i8", n)
    elif name == "FLOAT":
        fixed[:, start:start + 4] = _le(_numbers(col, pa.float32(), np.float32), "<f4", n)
    elif name == "DOUBLE":
        fixed[:, slot] = _le(_numbers(col, pa.float64(), np.float64), "<f8", n)
    elif name == "DATE":
        days = col if pa.types.is_date32(col.type) else col.cast(pa.date32())
        fixed[:, start:start + 4] = _le(_numbers(days.view(pa.int32()), pa.int32(), np.int32), "<i4", n)
    elif name == "TIME":  # Java: int millis of the day
        ms = col.cast(pa.time32("ms")) if col.type != pa.time32("ms") else col
        fixed[:, start:start + 4] = _le(_numbers(ms.view(pa.int32()), pa.int32(), np.int32), "<i4", n)
    elif name == "TIMESTAMP":
        return _timestamp(fixed, slot, col, precision)
    elif name == "DECIMAL":
        return _decimal(fixed, slot, col, precision, scale)
    elif name in _STRING or name in _BINARY:
        return _bytes(fixed, slot, col)
    else:
        raise TypeError(f"unsupported Paimon type for BinaryRow: {name}")
    return None


def _timestamp(fixed, slot, col: pa.Array, precision: int) -> _Var | None:
    n = len(col)
    if not pa.types.is_timestamp(col.type):
        raise TypeError(f"TIMESTAMP column holds {col.type}")
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[col.type.unit]
    raw = _numbers(col.view(pa.int64()), pa.int64(), np.int64)  # UTC epoch for LTZ, wall clock otherwise
    if per_second <= 1_000:
        millis, nanos = raw * (1_000 // per_second), np.zeros(n, dtype=np.int64)
    else:
        per_milli = per_second // 1_000
        millis, rest = np.divmod(raw, per_milli)  # floor, as Java's Timestamp.fromLocalDateTime
        nanos = rest * (1_000_000 // per_milli)
    if precision <= 3:  # compact: epoch millis in the slot
        fixed[:, slot] = _le(millis, "<i8", n)
        return None
    valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False)) if col.null_count else np.ones(n, bool)
    size = np.where(valid, 8, 0).astype(np.int64)
    return _Var(size, nanos, _le(millis, "<i8", n).reshape(-1), np.arange(n, dtype=np.int64) * 8, size)


_BIT_LENGTH = np.array([int(b).bit_length() for b in range(256)], dtype=np.int64)


def _decimal(fixed, slot, col: pa.Array, precision: int, scale: int) -> _Var | None:
    n = len(col)
    target = pa.decimal128(precision, scale)
    if col.type != target:
        col = col.cast(target)
    nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False)) if col.null_count else None
    if nulls is not None:
        col = col.fill_null(pa.scalar(0, target))
    raw = np.frombuffer(col.buffers()[1], dtype=np.uint8)[16 * col.offset:16 * (col.offset + n)].reshape(n, 16)
    if precision <= 18:  # compact: the unscaled long in the slot
        fixed[:, slot] = raw[:, :8]
        return None
    # Java BigInteger.toByteArray: minimal big-endian two's complement, bitLength // 8 + 1 bytes.
    big = raw[:, ::-1]
    negative = big[:, 0] >= 0x80
    magnitude = np.where(negative[:, None], ~big, big)
    nonzero = magnitude != 0
    first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 16)
    top = magnitude[np.arange(n), np.minimum(first, 15)]
    bit_length = np.where(first < 16, (15 - first) * 8 + _BIT_LENGTH[top], 0)
    length = bit_length // 8 + 1
    gather = np.minimum((16 - length)[:, None] + np.arange(16), 15)
    payload = np.where(np.arange(16) < length[:, None], big[np.arange(n)[:, None], gather], 0).astype(np.uint8)
    padded = np.full(n, 16, dtype=np.int64)
    if nulls is not None:
        padded[nulls] = 0
    return _Var(padded, length, payload.reshape(-1), np.arange(n, dtype=np.int64) * 16, np.where(padded > 0, length, 0))


def _bytes(fixed, slot, col: pa.Array) -> _Var | None:
    n = len(col)
    if not pa.types.is_large_binary(col.type):
        col = col.cast(pa.large_binary())
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int64)[col.offset:col.offset + n + 1]
    data_buf = col.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if col.null_count:
        lengths = np.where(np.asarray(col.is_valid().to_numpy(zero_copy_only=False)), lengths, 0)
    short = lengths <= MAX_FIX_PART_DATA_SIZE
    # Short values: the bytes in the slot, 0x80 | length in its last byte.
    rows = np.nonzero(short)[0]
    flat = fixed.reshape(-1)
    width = fixed.shape[1]
    copy_segments(flat, rows * width + slot.start, data, offsets[rows], lengths[rows])
    fixed[rows, slot.start + 7] = (0x80 | lengths[rows]).astype(np.uint8)
    if short.all():
        return None
    long_len = np.where(short, 0, lengths)
    padded = (long_len + 7) & ~np.int64(7)
    return _Var(padded, long_len, data, offsets[:-1], long_len)
