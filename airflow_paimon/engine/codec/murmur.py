"""Paimon's BinaryRow.hashCode(): MurmurHashUtils.hashBytesByWords (MurmurHash3 x86_32 over 4-byte
little-endian words, seed 42, final mix with the byte length), for many rows at once in numpy uint32
arithmetic (which wraps like Java int arithmetic).
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from airflow_paimon.engine.codec.binary_row import RowBytes, binary_rows

DEFAULT_SEED = 42
U32 = npt.NDArray[np.uint32]
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: U32, r: int) -> U32:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h: U32, k: U32) -> U32:
    k = _rotl(k * _C1, 15) * _C2
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h: U32, length: np.ndarray) -> U32:
    h = h ^ length.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def mix_words(h: np.ndarray, words: np.ndarray, first_word: np.ndarray, nwords: np.ndarray) -> np.ndarray:
    """``h`` (uint32 per row) mixed with row i's ``nwords[i]`` words starting at ``words[first_word[i]]``."""
    h = h.copy()
    if len(h) == 0 or int(nwords.max()) == 0:
        return h
    with np.errstate(over="ignore"):
        if (nwords == nwords[0]).all():  # equal word counts: one strided column per word
            matrix = words[first_word[:, None] + np.arange(int(nwords[0]))]
            for j in range(matrix.shape[1]):
                h = _mix(h, matrix[:, j])
        else:  # rows sorted longest first, so word j is needed by a prefix of them
            order = np.argsort(-nwords, kind="stable")
            first = first_word[order]
            # rows needing word j: those with more than j words
            active = np.searchsorted(-nwords[order], -np.arange(int(nwords.max())), side="left")
            hs = h[order]
            for j, count in enumerate(active):
                hs[:count] = _mix(hs[:count], words[first[:count] + j])
            h[order] = hs
    return h


def mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One MurmurHash3 round (mixK1 then mixH1) of ``k`` into ``h``, uint32 arrays."""
    with np.errstate(over="ignore"):
        return _mix(h, k)


def fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    """MurmurHash3's finalisation with the byte length."""
    with np.errstate(over="ignore"):
        return _fmix(h, length)


def hash_by_words(rows: RowBytes, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Java int hash of each row (lengths are multiples of 4, as every BinaryRow's are)."""
    n = len(rows.lengths)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    h = mix_words(np.full(n, seed, dtype=np.uint32), rows.data.view("<u4"), rows.starts // 4, rows.lengths // 4)
    return fmix(h, rows.lengths).view(np.int32)


def hash_codes(columns: list, paimon_types: list) -> np.ndarray:
    """BinaryRow.hashCode() of the rows made of ``columns`` (typed as ``paimon_types``): Java ints."""
    return hash_by_words(binary_rows(columns, paimon_types))
