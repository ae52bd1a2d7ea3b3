"""Bucket choice for new keys, as Paimon's cross-partition BucketAssigner does it, for one index shard.

Each shard owns the buckets whose id % shards == shard, and counts the keys it has put in each. A new key
goes to the smallest owned bucket of its partition still under ``dynamic-bucket.target-row-num``,
else to the smallest owned bucket id not used yet.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.errors import InternalError


class BucketAssigner:
    def __init__(self, shard: int, shards: int, target_row_num: int,
                 counts: dict[str, dict[Any, int]] | None = None):  # bucket ids as ints or, from JSON, text
        if target_row_num <= 0:
            raise InternalError(f"dynamic-bucket.target-row-num must be positive, got {target_row_num}")
        self.shard, self.shards, self.target = shard, shards, target_row_num
        self.counts: dict[str, dict[int, int]] = defaultdict(dict)
        for partition, buckets in (counts or {}).items():
            self.counts[partition].update({int(b): int(c) for b, c in buckets.items()})

    def _owned(self, bucket: int) -> bool:
        return bucket % self.shards == self.shard

    def _fill_order(self, partition: str, n: int) -> np.ndarray:
        """Buckets for ``n`` new keys of one partition, in arrival order; updates the counts."""
        counts = self.counts[partition]
        out = []
        for bucket in sorted(counts):
            if n == 0:
                break
            room = self.target - counts[bucket]
            if self._owned(bucket) and room > 0:
                take = min(room, n)
                out.append(np.full(take, bucket, dtype=np.int32))
                counts[bucket] += take
                n -= take
        bucket = self.shard
        while n > 0:
            if bucket not in counts:
                take = min(self.target, n)
                out.append(np.full(take, bucket, dtype=np.int32))
                counts[bucket] = take
                n -= take
            bucket += self.shards
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int32)

    def assign(self, partitions: pa.Array) -> np.ndarray:
        """Buckets for new keys (given in arrival order) of the given encoded partitions."""
        result = np.zeros(len(partitions), dtype=np.int32)
        if len(partitions) == 0:
            return result
        encoded = partitions.dictionary_encode()
        codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False))
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
        for code, partition in enumerate(encoded.dictionary.to_pylist()):
            rows = order[bounds[code]:bounds[code + 1]]
            result[rows] = self._fill_order(partition, len(rows))
        return result

    def decrement(self, partitions: pa.Array, buckets: np.ndarray) -> None:
        """Keys left these (partition, bucket) places."""
        if len(buckets) == 0:
            return
        pairs = pa.table({"p": partitions, "b": pa.array(buckets, pa.int32())}).group_by(["p", "b"]).aggregate(
            [([], "count_all")])
        for p, b, c in zip(*(pairs.column(i).to_pylist() for i in range(3))):
            left = self.counts[p].get(b, 0) - c
            if left > 0:
                self.counts[p][b] = left
            else:
                self.counts[p].pop(b, None)

    def increment(self, partitions: pa.Array, buckets: np.ndarray) -> None:
        """Keys arrived at these (partition, bucket) places (written by another writer)."""
        for p, bs in count_buckets(partitions, buckets).items():
            for b, c in bs.items():
                self.counts[p][int(b)] = self.counts[p].get(int(b), 0) + c

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {p: {str(b): c for b, c in bs.items()} for p, bs in self.counts.items() if bs}


def count_buckets(partitions: pa.Array, buckets: np.ndarray) -> dict[str, dict[str, int]]:
    """Keys per (encoded partition, bucket), the bootstrap's starting counts for BucketAssigner."""
    if len(buckets) == 0:
        return {}
    grouped = pa.table({"p": partitions, "b": pa.array(buckets, pa.int32())}).group_by(["p", "b"]).aggregate(
        [([], "count_all")])
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for p, b, c in zip(*(grouped.column(i).to_pylist() for i in range(3))):
        out[p][str(b)] = c
    return dict(out)
