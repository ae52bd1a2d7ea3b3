"""A write task's rows, held like Paimon's write buffer: in memory up to ``write-buffer-size``; beyond it,
spilled to local Arrow files by key hash and read back one index shard at a time, in chunks of about the
buffer's size whose keys no other chunk has.

Key-disjoint chunks can be assigned and written one after another against the same shard index: a key's
records (its duplicates, its move, its delete) all meet in one chunk, so merging them needs no other chunk,
and the memory of a task is bounded by the buffer, not by the batch (a 50M-row first load held 25M rows in
each Python worker before).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from airflow_paimon.engine.index.sharding import shard_of

# Spill files per shard: a shard's rows come back in chunks of 1/SPLITS of it, or several of those that fit
# the buffer together. A shard larger than SPLITS buffers gives chunks over the buffer's size.
SPLITS = 32
_PART = "_spill_part"


class WriteBuffer:
    """The rows of one task, which holds every row of the shards it is given (``shards`` in all)."""

    def __init__(self, primary_keys: list[str], shards: int, limit_bytes: float, workdir: str | None = None):
        self.primary_keys, self.shards, self.limit = primary_keys, shards, limit_bytes
        self.rows_per_shard = np.zeros(shards, dtype=np.int64)
        self._workdir = workdir
        self._batches: list[pa.RecordBatch] = []
        self._parts: list[np.ndarray] = []  # per held batch: each row's spill part
        self._bytes = 0
        self._spill_dir: str | None = None

    @property
    def spilled(self) -> bool:
        return self._spill_dir is not None

    def extend(self, batches: Iterable[pa.RecordBatch]) -> "WriteBuffer":
        """Take the task's input (once: a spill takes the rest of ``batches`` with it)."""
        if self.spilled:
            raise RuntimeError("a spilled write buffer takes no more rows")
        batches = iter(batches)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            self._batches.append(batch)
            self._parts.append(self._parts_of(batch))
            self._bytes += batch.nbytes
            if self._bytes > self.limit:
                self._spill(batches)
                return self
        return self

    def _parts_of(self, batch: pa.RecordBatch) -> np.ndarray:
        """Each row's part, pmod(key hash, shards·SPLITS): part p holds rows of shard p mod shards (the same
        hash, the shard count dividing the part count)."""
        parts = shard_of(batch, self.primary_keys, self.shards * SPLITS)
        self.rows_per_shard += np.bincount(parts % self.shards, minlength=self.shards)
        return parts

    def _spill(self, rest: Iterator[pa.RecordBatch]) -> None:
        """What is held and the rest of the input to files, a directory per part."""
        self._spill_dir = tempfile.mkdtemp(prefix="paimon-spill-", dir=self._workdir)
        schema = self._batches[0].schema
        held = list(zip(self._batches, self._parts))
        self._batches, self._parts = [], []

        def parted() -> Iterator[pa.RecordBatch]:
            for batch, parts in (*held, *((b, self._parts_of(b)) for b in rest if b.num_rows)):
                yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(parts, pa.int32())],
                                                 names=[*schema.names, _PART])

        part_schema = schema.append(pa.field(_PART, pa.int32()))
        ds.write_dataset(pa.RecordBatchReader.from_batches(part_schema, parted()), self._spill_dir, format="arrow",
                         partitioning=ds.partitioning(pa.schema([(_PART, pa.int32())])),
                         existing_data_behavior="overwrite_or_ignore")

    def shard_chunks(self) -> Iterator[tuple[int, Iterator[pa.Table]]]:
        """(shard, its chunks) for each shard holding rows, in shard order."""
        if not self.spilled:
            if not self._batches:
                return
            rows = all_nullable(pa.Table.from_batches(self._batches))
            ids = np.concatenate(self._parts) % self.shards
            for shard in np.nonzero(self.rows_per_shard)[0]:
                yield int(shard), iter([rows.filter(pa.array(ids == shard))])
            return
        for shard in np.nonzero(self.rows_per_shard)[0]:
            yield int(shard), self._chunks_of(int(shard))

    def _chunks_of(self, shard: int) -> Iterator[pa.Table]:
        """Shard ``shard``'s parts read back, consecutive parts together while they fit the buffer."""
        group, size = [], 0
        for p in range(shard, self.shards * SPLITS, self.shards):
            directory = os.path.join(self._spill_dir, str(p))
            if not os.path.isdir(directory):
                continue
            part_size = sum(e.stat().st_size for e in os.scandir(directory))
            if group and size + part_size > self.limit:
                yield _read(group)
                group, size = [], 0
            group.append(directory)
            size += part_size
        if group:
            yield _read(group)

    def close(self) -> None:
        if self._spill_dir:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None
        self._batches, self._parts = [], []

    def __enter__(self) -> "WriteBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read(directories: list[str]) -> pa.Table:
    return all_nullable(pa.concat_tables(ds.dataset(d, format="arrow").to_table() for d in directories))


def all_nullable(rows: pa.Table) -> pa.Table:
    """Every field nullable, as Spark's groupBy().applyInArrow() hands them over: the engine's tables mix both."""
    return rows.cast(pa.schema([f.with_nullable(True) for f in rows.schema]))
