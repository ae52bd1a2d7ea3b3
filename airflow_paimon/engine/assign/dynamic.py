"""Dynamic-bucket tables (``bucket`` = -1, the primary key holds every partition field), as Java's
HashBucketAssigner / PartitionIndex / DynamicBucketIndexMaintainer do it, columnar.

- The key hash is BinaryRow.hashCode() of the trimmed primary key; the HASH index files (index/hash_index.py)
  say which bucket of its partition every hash already lives in.
- With several assigners, row r goes to assigner ``computeAssigner(partitionHash, keyHash, channels,
  assigners)`` and assigner a only opens buckets with ``bucket % assigners == a % assigners``.
- A known hash keeps its bucket. New hashes (first occurrence order) fill this assigner's buckets under
  ``dynamic-bucket.target-row-num`` in order, then open the smallest free own bucket ids, each up to the target;
  once ``dynamic-bucket.max-buckets`` is reached they go to a random own bucket (Java does the same).
- Every written row's hash goes into its bucket's HASH file (deletes too: Java's maintainer never shrinks).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.codec.binary_row import RowBytes
from airflow_paimon.engine.codec.murmur import hash_by_words, hash_codes
from airflow_paimon.engine.errors import InternalError, ValidationError
from airflow_paimon.engine.index.hash_index import hash_index_entries, read_hashes, write_hashes
from airflow_paimon.engine.options import MAX_DYNAMIC_BUCKETS, TableOptions
from airflow_paimon.engine.options.checks import check_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def check_dynamic_table(table: FileStoreTable) -> None:
    """Refuse what Paimon refuses for a dynamic-bucket write (options: engine/options/checks.py)."""
    opts, ident = TableOptions.of(table), table.identifier.get_full_name()
    if opts.buckets.bucket != -1:
        raise ValidationError(ident, "a dynamic-bucket write needs bucket = -1", option="bucket",
                              value=str(opts.buckets.bucket))
    if not table.primary_keys:
        raise ValidationError(ident, "bucket = -1 without a primary key is an append (bucket-unaware) table, "
                                     "not a dynamic-bucket one")
    missing = [p for p in table.partition_keys if p not in table.primary_keys]
    if missing:
        raise ValidationError(ident, f"the primary key lacks partition fields {missing}: that is a "
                                     "cross-partition table, not a dynamic-bucket one")
    check_table(table)  # bucket-key, dynamic-bucket.* and every other option


def key_hashes(table: FileStoreTable, rows: pa.Table | pa.RecordBatch) -> np.ndarray:
    """Java int hash of each row's trimmed primary key (the HASH index's unit)."""
    fields = table.trimmed_primary_keys_fields
    return hash_codes([rows.column(f.name) for f in fields], [f.type for f in fields])


def partition_hashes(table: FileStoreTable, rows: pa.Table | pa.RecordBatch) -> np.ndarray:
    """Java int hash of each row's partition (BinaryRow.EMPTY_ROW, 8 zero bytes, when unpartitioned)."""
    fields = table.partition_keys_fields
    if not fields:
        n = rows.num_rows
        return hash_by_words(RowBytes(np.zeros(8 * n, np.uint8), np.arange(n, dtype=np.int64) * 8,
                                      np.full(n, 8, np.int64)))
    return hash_codes([rows.column(f.name) for f in fields], [f.type for f in fields])


def _java_rem(a: np.ndarray, n: int) -> np.ndarray:
    return np.fmod(a.astype(np.int64), n)


def assigner_of(partition_hash: np.ndarray, key_hash: np.ndarray, num_channels: int, num_assigners: int) -> np.ndarray:
    """Java BucketAssigner.computeAssigner: the assigner (channel) a row is shuffled to."""
    start = np.abs(_java_rem(partition_hash, num_channels))
    return ((start + np.abs(_java_rem(key_hash, num_assigners))) % num_channels).astype(np.int32)


class PartitionIndex:
    """Java PartitionIndex of one partition: sorted known hashes with their buckets, and the row count of
    each of this assigner's buckets (iterated in ascending bucket id; Java iterates its HashMap)."""

    def __init__(self, hashes: np.ndarray, buckets: np.ndarray, bucket_rows: dict[int, int], target_row_num: int,
                 identifier: str = "?"):  # the table, named by a refusal
        order = np.argsort(hashes, kind="stable")
        self.hashes, self.buckets = hashes[order].astype(np.int32), buckets[order].astype(np.int32)
        self.non_full = {b: bucket_rows[b] for b in sorted(bucket_rows)}
        self.total = list(self.non_full)
        self.target = target_row_num
        self.upper_bound_reached = False
        self.identifier = identifier

    def lookup(self, key_hash: np.ndarray) -> np.ndarray:
        """Bucket of each known hash, -1 for a new one."""
        if len(self.hashes) == 0:
            return np.full(len(key_hash), -1, dtype=np.int32)
        pos = np.minimum(np.searchsorted(self.hashes, key_hash), len(self.hashes) - 1)
        return np.where(self.hashes[pos] == key_hash, self.buckets[pos], -1).astype(np.int32)

    def assign(self, key_hash: np.ndarray, is_my_bucket, max_buckets: int, rng=np.random) -> np.ndarray:
        """Buckets for ``key_hash`` in arrival order; remembers the new hashes."""
        key_hash = np.asarray(key_hash, dtype=np.int32)
        out = self.lookup(key_hash)
        new = out < 0
        if not new.any():
            return out
        uniq, first, inverse = np.unique(key_hash[new], return_index=True, return_inverse=True)
        arrival = np.argsort(first, kind="stable")  # new hashes in first-occurrence order
        assigned = np.empty(len(uniq), dtype=np.int32)
        assigned[arrival] = self._fill(len(uniq), is_my_bucket, max_buckets, rng)
        out[new] = assigned[inverse.reshape(-1)]
        merged = np.concatenate([self.hashes, uniq])
        order = np.argsort(merged, kind="stable")
        self.hashes, self.buckets = merged[order], np.concatenate([self.buckets, assigned])[order]
        return out

    def _fill(self, n: int, is_my_bucket, max_buckets: int, rng) -> np.ndarray:
        parts = []
        for bucket in list(self.non_full):  # 2. existing buckets under the target
            room = self.target - self.non_full[bucket]
            if n and room > 0:
                take = min(room, n)
                parts.append(np.full(take, bucket, np.int32))
                self.non_full[bucket] += take
                n -= take
            if self.non_full[bucket] >= self.target:
                del self.non_full[bucket]
        global_max = (MAX_DYNAMIC_BUCKETS if max_buckets == -1 else max_buckets) - 1
        taken = set(self.total)
        candidate = 0
        while n and not self.upper_bound_reached:  # 3. new buckets, smallest free own id first
            while candidate <= global_max and (candidate in taken or not is_my_bucket(candidate)):
                candidate += 1
            if candidate > global_max:
                if max_buckets == -1:
                    raise ValidationError(self.identifier, f"Too many buckets ({global_max}): increase "
                                          "dynamic-bucket.target-row-num", option="dynamic-bucket.target-row-num",
                                          value=self.target)
                self.upper_bound_reached = True
                break
            take = min(self.target, n)
            parts.append(np.full(take, candidate, np.int32))
            self.total.append(candidate)
            taken.add(candidate)
            if take < self.target:
                self.non_full[candidate] = take
            n -= take
        if n:  # 4. over max-buckets: a random own bucket per key, as Java's ListUtils.pickRandomly
            if not self.total:
                raise ValidationError(self.identifier, "no dynamic bucket is available to this assigner: fewer "
                                      "assigners or more dynamic-bucket.max-buckets",
                                      option="dynamic-bucket.max-buckets", value=max_buckets)
            parts.append(np.asarray(self.total, np.int32)[rng.randint(0, len(self.total), n)])
        return np.concatenate(parts) if parts else np.zeros(0, np.int32)


class HashBucketAssigner:
    """Bucket assignment of one assigner (``assign_id`` of ``num_assigners``) at a base snapshot."""

    def __init__(self, table: FileStoreTable, snapshot, *, num_channels: int = 1, num_assigners: int | None = None,
                 assign_id: int = 0, target_row_num: int | None = None, max_buckets: int | None = None):
        check_dynamic_table(table)
        buckets = TableOptions.of(table).buckets
        self.table, self.snapshot = table, snapshot
        self.num_channels = num_channels
        self.num_assigners = num_channels if num_assigners is None else num_assigners
        self.assign_id = assign_id
        self.target = buckets.target_row_num if target_row_num is None else target_row_num
        self.max_buckets = buckets.max_buckets if max_buckets is None else max_buckets
        self._entries = hash_index_entries(table, snapshot)
        self._indexes: dict[tuple, PartitionIndex] = {}

    def is_my_bucket(self, bucket: int) -> bool:
        return bucket % self.num_assigners == self.assign_id % self.num_assigners

    def partition_index(self, partition: tuple, partition_hash: int) -> PartitionIndex:
        index = self._indexes.get(partition)
        if index is None:
            index = self._indexes[partition] = self._load(partition, partition_hash)
        return index

    def _load(self, partition: tuple, partition_hash: int) -> PartitionIndex:
        """Java PartitionIndex.loadIndex: only this assigner's hashes, counts of its own buckets."""
        hashes, buckets, rows = [], [], {}
        for bucket, entry in self._entries.get(partition, {}).items():
            h = read_hashes(self.table, entry)
            if self.is_my_bucket(bucket):
                rows[bucket] = len(h)
            mine = assigner_of(np.full(len(h), partition_hash, np.int32), h, self.num_channels,
                               self.num_assigners) == self.assign_id
            hashes.append(h[mine])
            buckets.append(np.full(int(mine.sum()), bucket, np.int32))
        h = np.concatenate(hashes) if hashes else np.zeros(0, np.int32)
        b = np.concatenate(buckets) if buckets else np.zeros(0, np.int32)
        return PartitionIndex(h, b, rows, self.target, self.table.identifier.get_full_name())

    def assign(self, rows: pa.Table) -> np.ndarray:
        """Bucket of every row (rows in arrival order, carrying partition and primary-key columns)."""
        out = np.zeros(rows.num_rows, dtype=np.int32)
        if rows.num_rows == 0:
            return out
        khash, phash = key_hashes(self.table, rows), partition_hashes(self.table, rows)
        wrong = assigner_of(phash, khash, self.num_channels, self.num_assigners) != self.assign_id
        if wrong.any():
            raise InternalError(f"table {self.table.identifier}: {int(wrong.sum())} rows belong to another assigner "
                                f"than {self.assign_id}; shuffle by assigner_of() first")
        for partition, idx in partition_groups(rows, list(self.table.partition_keys)):
            index = self.partition_index(partition, int(phash[idx[0]]))
            out[idx] = index.assign(khash[idx], self.is_my_bucket, self.max_buckets)
        return out


def partition_groups(rows: pa.Table, partition_keys: list[str]) -> list[tuple[tuple, np.ndarray]]:
    """(partition tuple, row indices in arrival order) per distinct partition; one Python step per partition."""
    if not partition_keys:
        return [((), np.arange(rows.num_rows))]
    idx = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    grouped = rows.select(partition_keys).append_column("__i", idx).group_by(partition_keys, use_threads=False) \
        .aggregate([("__i", "list")])
    values = [grouped.column(k).to_pylist() for k in partition_keys]
    lists = grouped.column("__i_list")
    return [(tuple(v[g] for v in values), np.sort(lists[g].values.to_numpy(zero_copy_only=False)))
            for g in range(grouped.num_rows)]


def bucket_index_update(table: FileStoreTable, snapshot, partition: tuple, bucket: int, written_hashes: np.ndarray,
                        entries: dict | None = None) -> list:
    """Java DynamicBucketIndexMaintainer for one (partition, bucket): the bucket's HASH file at ``snapshot``
    plus the hashes of every row written now. Returns the index_adds of the CommitMessage ([] if no new
    hash). No index_deletes: the ADD replaces the old entry of the same (partition, bucket) on commit."""
    entries = hash_index_entries(table, snapshot) if entries is None else entries
    entry = entries.get(tuple(partition), {}).get(bucket)
    old = read_hashes(table, entry) if entry is not None else np.zeros(0, np.int32)
    new = np.setdiff1d(np.asarray(written_hashes, np.int32), old)
    if len(new) == 0:
        return []
    return [write_hashes(table, partition, bucket, np.concatenate([old, new]))]
