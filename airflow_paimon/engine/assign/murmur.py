"""Paimon's BinaryRow.hashCode(): MurmurHashUtils.hashBytesByWords (MurmurHash3 x86_32 over 4-byte
little-endian words, seed 42, final mix with the byte length), for many rows at once in numpy uint32
arithmetic (which wraps like Java int arithmetic).
"""
from __future__ import annotations

import numpy as np

from airflow_paimon.engine.assign.binary_row import RowBytes, binary_rows

DEFAULT_SEED = 42
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = _rotl(k * _C1, 15) * _C2
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h ^ length.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def hash_by_words(rows: RowBytes, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Java int hash of each row (lengths are multiples of 4, as every BinaryRow's are)."""
    n = len(rows.lengths)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    words = rows.data.view("<u4")
    nwords = rows.lengths // 4
    h = np.full(n, seed, dtype=np.uint32)
    with np.errstate(over="ignore"):
        if (nwords == nwords[0]).all():  # fixed-size rows: one strided column per word
            matrix = words.reshape(n, int(nwords[0])) if rows.starts[-1] == (n - 1) * rows.lengths[0] \
                else words[(rows.starts // 4)[:, None] + np.arange(int(nwords[0]))]
            for j in range(matrix.shape[1]):
                h = _mix(h, matrix[:, j])
        else:  # rows sorted longest first, so word j is needed by a prefix of them
            order = np.argsort(-nwords, kind="stable")
            first_word = rows.starts[order] // 4
            # rows needing word j: those with more than j words
            active = np.searchsorted(-nwords[order], -np.arange(int(nwords.max())), side="left")
            hs = h[order]
            for j, count in enumerate(active):
                hs[:count] = _mix(hs[:count], words[first_word[:count] + j])
            h[order] = hs
        h = _fmix(h, rows.lengths)
    return h.view(np.int32)


def hash_codes(columns: list, paimon_types: list) -> np.ndarray:
    """BinaryRow.hashCode() of the rows made of ``columns`` (typed as ``paimon_types``): Java ints."""
    return hash_by_words(binary_rows(columns, paimon_types))
