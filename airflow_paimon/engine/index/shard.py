"""One shard of the global key index: sorted SST files on storage, a RocksDB while a task works on it.

Key: the encoded primary key. Value: the key's bucket (4 bytes), when the key was last written (4 bytes,
epoch seconds, for ``cross-partition-upsert.index-ttl``), then its encoded partition — like Paimon's
GlobalIndexAssigner, which keeps (partition id, bucket) per key in RocksDB.

A task starts from the shard's published files (a base SST plus delta SSTs, applied in order) and records
what it changes, so it can publish just a delta: a run pays for the keys it touched, not the whole shard.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from itertools import count, starmap
from operator import itemgetter
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rocksdict import (BlockBasedOptions, Cache, DBCompressionType, IngestExternalFileOptions, Options, Rdict,
                       ReadOptions, SstFileWriter)

from airflow_paimon.engine.codec.keys import sort_keys
from airflow_paimon.engine.errors import InternalError
from airflow_paimon.engine.options import IndexOptions

HEADER = 8  # bucket + written_at
DEFAULTS = IndexOptions()  # the declared defaults (engine/options/)


def now_seconds() -> int:
    return int(time.time())


def encode_values(buckets: np.ndarray, partitions: pa.Array, written_at: int | None = None) -> pa.Array:
    """Index values: bucket, ``written_at`` (default now), then the encoded partition."""
    n = len(buckets)
    header = np.empty((n, 2), dtype=">u4")
    header[:, 0] = np.asarray(buckets, dtype=np.int64).astype(np.uint32)
    header[:, 1] = now_seconds() if written_at is None else written_at
    head = pa.Array.from_buffers(pa.binary(HEADER), n, [None, pa.py_buffer(header.tobytes())]).cast(pa.binary())
    return pc.binary_join_element_wise(head, partitions.cast(pa.binary()), b"")


@dataclass
class IndexValues:
    bucket: np.ndarray       # int32
    written_at: np.ndarray   # int64 epoch seconds
    partition: pa.Array      # string


def decode_values(values: pa.Array) -> IndexValues:
    """Decode non-null index values."""
    if len(values) == 0:
        return IndexValues(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64), pa.array([], pa.string()))
    heads = pc.binary_slice(values, 0, HEADER).cast(pa.binary(HEADER))
    header = np.frombuffer(heads.buffers()[1], dtype=">u4", count=2 * len(values),
                           offset=heads.offset * HEADER).reshape(-1, 2)
    longest = max(pc.max(pc.binary_length(values)).as_py(), HEADER)
    partitions = pc.binary_slice(values, HEADER, longest).cast(pa.string())
    return IndexValues(header[:, 0].astype(np.int32), header[:, 1].astype(np.int64), partitions)


def _sst_options(block_cache_bytes: int | None = None) -> Options:
    options = Options(raw_mode=True)
    options.set_compression_type(DBCompressionType.lz4())  # faster than the default snappy, and smaller
    table = BlockBasedOptions()
    # half of a batch's keys are new: a bloom filter answers those without reading a block (lookups of
    # 25k keys, half new, in a 1.25M-key shard: 0.05 s instead of 0.08-0.10 s; files 20 % larger)
    table.set_bloom_filter(10, False)
    if block_cache_bytes:
        table.set_block_cache(Cache(block_cache_bytes))
    options.set_block_based_table_factory(table)
    return options


def _options(opts: IndexOptions = DEFAULTS, mapped: bool = True) -> Options:
    options = _sst_options(opts.block_cache_bytes)
    options.create_if_missing(True)
    # a task's lookups touch most data blocks of a shard once: mapped files spare a read call per block
    # (25k lookups, half new, in a 1.25M-key shard: 0.045 s instead of 0.053 s)
    options.set_allow_mmap_reads(mapped)
    options.set_write_buffer_size(opts.write_buffer_bytes)
    return options


class KeyTwice(ValueError):
    """write_sst() was given a key twice (nothing is written)."""

    retryable: bool = False  # the caller's bug: a retry hands it the same keys


SST_CHUNK = 1 << 16  # keys turned into Python bytes at a time while writing an SST


def write_sst(keys: pa.Array, values: pa.Array, path: str) -> int:
    """Write (key, value) pairs as one sorted SST file; a null value writes a tombstone. ``values`` may be
    dictionary-encoded (a rebuild names a few places for millions of keys). Returns the entry count (0
    writes nothing). A key given twice is an error: the caller must resolve it first."""
    if len(keys) == 0:
        return 0
    ordered = sort_keys(keys)
    if ordered.duplicated:
        raise KeyTwice(f"writing {path}: a key appears twice")
    writer = SstFileWriter(options=_sst_options())
    writer.open(path)
    for where, chunk in ordered.chunks(SST_CHUNK):
        chunk_values = _value_bytes(values, ordered.order[where])
        if values.null_count == 0:
            # one C-level loop over the pairs: no Python frame per key
            deque(map(writer.__setitem__, chunk, chunk_values), maxlen=0)
            continue
        for k, v in zip(chunk, chunk_values):
            if v is None:
                del writer[k]
            else:
                writer[k] = v
    writer.finish()
    return len(keys)


def _value_bytes(values: pa.Array, order: np.ndarray) -> list:
    if pa.types.is_dictionary(values.type):
        dictionary = np.asarray(values.dictionary.to_pylist() + [None], dtype=object)
        indices = values.indices.take(pa.array(order)).fill_null(len(values.dictionary)).to_numpy()
        return dictionary[indices].tolist()
    # through numpy (nulls become None): 0.5 ms for 14k values where to_pylist() takes 9 ms
    return values.take(pa.array(order)).to_numpy(zero_copy_only=False).tolist()


def _write_changes(keys: pa.Array, values: pa.Array, path: str) -> int:
    """Changes as one SST file, the last change per key."""
    try:  # a task's changes of key-disjoint chunks name each key once: no copy to deduplicate them
        return write_sst(keys, values, path)
    except KeyTwice:
        pass
    # the latest position per key by hashing (write_sst sorts): 1.6 ms for 14k keys, sorting 3.1 ms
    last = (pa.table({"k": keys, "p": np.arange(len(keys))}).group_by("k", use_threads=False)
            .aggregate([("p", "max")]).column("p_max"))
    return write_sst(keys.take(last), values.take(last), path)


LOOKUP_BATCH = 1 << 16
# From this many keys a lookup takes rocksdict's multi-get rather than a get loop. Per key, shard of K keys, batch
# of B half known (tests/benchmarks/bench_index_lookup.py's keys): B = 2.5M, K = 5M: 2.10 µs against 2.88;
# B = 500k, K = 1.25M: 2.01 against 2.48; B = 250k, K = 5M: 2.48 against 2.71; below it the loop wins (B = 125k,
# K = 250k: 1.81 against 1.72; B = 50k, K = 100k: 1.93 against 1.54)
MULTI_GET_FROM = 1 << 18
# Recorded changes a shard holds before they go into its DB (≈ 40 bytes each in memory, about three times that
# while written): a first load of millions of new keys per shard would otherwise hold them all until the export.
# A 12.5M-key shard in isolation peaked 73-82 MiB lower with 1M than with 2M
HELD_CHANGES = 1_000_000


class ShardIndex:
    """A local RocksDB holding one shard; remembers the keys changed since it was loaded.

    ``put`` and ``delete`` only record a change; the DB takes in the changes recorded since the last time
    (as one SST, no Python step per key) when it is next read — ``lookup``, ``ingest``, ``export_full``.
    A task that looks up once and then exports a delta never writes its changes into the DB at all. Nor does one
    whose lookups are ``disjoint``: each lookup's keys are none that an earlier change touched (a write task's
    key-disjoint chunks, engine/write/buffer.py), so no lookup needs the changes before it. A shard loaded from no
    files (a first load) then answers such lookups without reading the DB: it holds only the task's own changes.
    """

    disjoint = False

    def __init__(self, workdir: str | None = None, options: IndexOptions = DEFAULTS, mapped: bool = True):
        """``mapped``: read the DB's files through memory maps, for a shard whose lookups will read them (one
        loaded from files). A first load's only full read is its export, and every page it maps counts in
        the task's memory: a 12.5M-key shard's export peaked 154 MiB higher mapped."""
        self.options = options
        self._dir = tempfile.mkdtemp(prefix="paimon-index-", dir=workdir)
        self._db = Rdict(os.path.join(self._dir, "db"), _options(options, mapped))
        self._changed_keys: list[pa.Array] = []
        self._changed_values: list[pa.Array] = []
        self._in_db = 0  # how many of the recorded changes the DB holds
        self._released = 0  # changes no longer held in memory (in the DB only): the shard exports in full
        self._loaded = False  # whether the DB holds keys from files (ingest), not only the recorded changes
        self._sst_names = count()

    def ingest(self, sst_paths: list[str], move: bool = False) -> None:
        """Load SST files, oldest first (each later file overrides the earlier ones). ``move`` hands the
        files over to the DB (hard links where possible; the given paths are gone afterwards) instead of
        having RocksDB copy them."""
        self._flush()
        self._ingest(sst_paths, move)
        self._loaded = self._loaded or bool(sst_paths)

    def _ingest(self, sst_paths: list[str], move: bool) -> None:
        if not sst_paths:
            return
        options = IngestExternalFileOptions()
        options.set_move_files(move)
        # one call for all files: RocksDB gives each file of the list its own, increasing sequence number, so
        # a later file still wins where key ranges overlap (tested)
        self._db.ingest_external_file(list(sst_paths), options)

    def lookup(self, keys: pa.Array) -> pa.Array:
        """The index value of each key; null where the key is unknown or has outlived the index TTL."""
        if len(keys) == 0:
            return pa.array([], pa.binary())
        if self.disjoint and not self._loaded:
            # the DB holds only this task's earlier changes, none of these keys: no gets (a 10M-row first load's
            # later chunks looked every key up in the changes released into the DB: 6-19 % of its assign-and-write)
            return pa.nulls(len(keys), pa.binary())
        if not self.disjoint:
            self._flush()
        # in key order, a data block read once serves its neighbours (20-30 % faster than input order)
        get, ordered = self._db.get, sort_keys(keys)
        back = np.empty_like(ordered.order)  # the inverse permutation, O(n) where argsort is O(n log n)
        back[ordered.order] = np.arange(len(back))
        # a slice at a time: a Python bytes object per key only for LOOKUP_BATCH keys (all 1.5M keys of a chunk
        # at once held 300 MB), and each key made a bytes object once (slicing ``ordered.keys`` made all of them
        # per slice: 2.5M keys took 14.5 s instead of 7.1)
        if len(back) >= MULTI_GET_FROM:
            # rocksdict's stub types a multi-get's keys as a list of its key union (list is invariant)
            parts = [pa.array(get(cast(list, chunk)), pa.binary()) for _, chunk in ordered.chunks(LOOKUP_BATCH)]
        else:
            parts = [pa.array([get(k) for k in chunk], pa.binary()) for _, chunk in ordered.chunks(LOOKUP_BATCH)]
        found = pa.concat_arrays(parts).take(back)
        if self.options.ttl_seconds is None or found.null_count == len(found):
            return found
        written_at = decode_values(found.fill_null(b"\0" * HEADER)).written_at
        expired = pa.array((now_seconds() - written_at) > self.options.ttl_seconds)
        return pc.if_else(expired, pa.scalar(None, pa.binary()), found)

    def put(self, keys: pa.Array, values: pa.Array) -> None:
        self._record(keys, values.cast(pa.binary()))

    def delete(self, keys: pa.Array) -> None:
        self._record(keys, pa.nulls(len(keys), pa.binary()))

    def _record(self, keys: pa.Array, values: pa.Array) -> None:
        self._changed_keys.append(keys)
        self._changed_values.append(values)
        if self.changed - self._released > HELD_CHANGES:
            self._release()

    def _release(self) -> None:
        """The held changes into the DB and out of memory (the shard then exports in full). The recorded arrays
        go before their SST is sorted and written, which holds about three copies of the changes at once."""
        changes = self._changes_from(self._in_db)
        self._released += sum(len(k) for k in self._changed_keys)
        self._changed_keys, self._changed_values, self._in_db = [], [], 0
        self._into_db(changes)

    @property
    def changed(self) -> int:
        return self._released + sum(len(k) for k in self._changed_keys)

    @property
    def exports_in_full(self) -> bool:
        """Whether changes were released from memory: only the DB has them all, export_full() writes them."""
        return self._released > 0

    def export_delta(self, path: str) -> int:
        """Write the keys changed since loading (last change per key; deletes as tombstones) to one SST."""
        if self.exports_in_full:
            raise InternalError("changes were released into the DB: export the shard in full")
        changes = self._changes_from(0)
        return _write_changes(*changes, path) if changes else 0

    def _changes_from(self, start: int) -> tuple[pa.Array, pa.Array] | None:
        """The recorded changes from the ``start``-th on, as one array of keys and one of values."""
        if start == len(self._changed_keys):
            return None
        return pa.concat_arrays(self._changed_keys[start:]), pa.concat_arrays(self._changed_values[start:])

    def _flush(self) -> None:
        """Bring the changes recorded since the last flush into the DB."""
        changes = self._changes_from(self._in_db)
        self._into_db(changes)
        self._in_db = len(self._changed_keys)

    def _into_db(self, changes: tuple[pa.Array, pa.Array] | None) -> None:
        if changes is None:
            return
        path = os.path.join(self._dir, f"changes-{next(self._sst_names)}.sst")
        if _write_changes(*changes, path):
            self._ingest([path], move=True)

    def export_full(self, path: str) -> int:
        """Write the whole shard, in key order, to one SST file; returns the key count."""
        self._flush()
        scan = ReadOptions()
        # a scan reads each block once: caching them would fill the block cache to its size (rocksdict's stub
        # lacks the flag its fill_cache takes)
        scan.fill_cache(False)  # type: ignore[call-arg]
        items = iter(self._db.items(read_opt=scan))
        first = next(items, None)
        if first is None:
            return 0
        writer = SstFileWriter(options=_sst_options())
        writer.open(path)
        writer[first[0]] = first[1]
        counted = count(1)
        # C-level iteration as in write_sst; zip stops on items before drawing from the counter
        deque(starmap(writer.__setitem__, map(itemgetter(0), zip(items, counted))), maxlen=0)
        writer.finish()
        return next(counted)

    def close(self) -> None:
        self._db.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
