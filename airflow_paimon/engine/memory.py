"""Handing freed memory back to the operating system between the phases of a long task.

Arrow's allocator (mimalloc) and glibc's malloc keep freed pages for reuse. A Spark task that assigns one index
shard after another would otherwise carry the first shard's high-water mark (its RocksDB, lookups and SST
writes) into the next one, and its peak would add up across shards.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

import pyarrow as pa


def release_free_memory() -> None:
    """Return the free pages Arrow's pool and malloc hold (malloc's: only where it has malloc_trim, glibc)."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
