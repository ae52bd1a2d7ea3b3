"""Handing freed memory back to the operating system between the phases of a long task.

Arrow's allocator (mimalloc) and glibc's malloc keep freed pages for reuse. A Spark task that assigns one index
shard after another would otherwise carry the first shard's high-water mark (its RocksDB, lookups and SST
writes) into the next one, and its peak would add up across shards.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import pyarrow as pa

_libc = None


def release_free_memory() -> None:
    """Return the free pages Arrow's pool and malloc hold (a no-op where malloc has no malloc_trim)."""
    global _libc
    pa.default_memory_pool().release_unused()
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name) if name else False
    if _libc and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)
