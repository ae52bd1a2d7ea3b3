"""How a table's rows find their bucket — Paimon's BucketMode, read once per table and compared as members.

A table without a primary key is APPEND here whatever its ``bucket``: pypaimon's own writer writes it.
"""
from __future__ import annotations

from enum import Enum


class BucketMode(Enum):
    HASH_FIXED = "HASH_FIXED"            # bucket > 0: the bucket is a hash of the key
    HASH_DYNAMIC = "HASH_DYNAMIC"        # bucket -1, the key holds every partition field: Paimon's HASH index
    CROSS_PARTITION = "CROSS_PARTITION"  # bucket -1, the key lacks a partition field: the global key index
    APPEND = "APPEND"                    # no primary key
    POSTPONE = "POSTPONE_MODE"           # bucket -2: not supported here

    @classmethod
    def of(cls, table) -> "BucketMode":
        """The mode of a pypaimon table (``table.bucket_mode()`` has no str(): its ``.name`` is read)."""
        if not table.primary_keys:
            return cls.APPEND
        return cls(table.bucket_mode().name)

    @property
    def merged_upstream(self) -> bool:
        """Whether the assigner has merged each key's records before the write task (cross-partition)."""
        return self is BucketMode.CROSS_PARTITION
