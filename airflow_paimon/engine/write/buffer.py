"""A write task's rows, held like Paimon's write buffer: in memory up to ``write-buffer-size``; beyond it,
spilled to local Arrow files and read back one index shard at a time, in chunks of about the buffer's size
whose keys no other chunk has.

Key-disjoint chunks can be assigned one after another against the same shard index: a key's records (its
duplicates, its move, its delete) all meet in one chunk, so merging them needs no other chunk. The memory of
a task is then bounded by the buffer, not by the batch (a 50M-row first load held 25M rows in each Python
worker before).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter, defaultdict
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.errors import InternalError
from airflow_paimon.engine.index.sharding import shard_of

# Parts per shard: a spilled shard comes back in chunks of 1/SPLITS of it, or several of those that fit the
# buffer together. A shard larger than SPLITS buffers gives chunks over the buffer's size.
SPLITS = 32


class Runs:
    """Tables spilled to local Arrow files, each sorted into one record batch per part (an int per row); read
    back by part, a part's batches from every file."""

    def __init__(self, directory: str):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self._files: list[str] = []
        self._where: dict[int, list[tuple[int, int]]] = defaultdict(list)  # part -> (file, batch)
        self.bytes: Counter = Counter()  # part -> bytes spilled
        self._schema: pa.Schema | None = None

    def add(self, rows: pa.Table, parts: np.ndarray) -> None:
        order = np.argsort(parts, kind="stable")
        rows, parts = rows.take(pa.array(order)).combine_chunks(), parts[order]
        ids, starts = np.unique(parts, return_index=True)
        path = os.path.join(self.directory, f"run-{len(self._files):05d}.arrow")
        self._schema = rows.schema
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, rows.schema) as out:
            for i, (part, start, end) in enumerate(zip(ids, starts, [*starts[1:], len(parts)])):
                piece = rows.slice(start, end - start)
                out.write_batch(piece.to_batches()[0])  # one chunk per column: one batch
                self._where[int(part)].append((len(self._files), i))
                self.bytes[int(part)] += piece.nbytes
        self._files.append(path)

    def parts(self) -> list[int]:
        return sorted(self._where)

    def read(self, parts: list[int]) -> pa.Table:
        wanted = [fb for p in parts for fb in self._where[p]]
        batches = []
        for f in sorted({f for f, _ in wanted}):
            with pa.OSFile(self._files[f]) as source:  # read, not mapped: only the batches asked for
                reader = pa.ipc.open_file(source)
                batches += [reader.get_batch(b) for f2, b in wanted if f2 == f]
        return pa.Table.from_batches(batches, self._schema)


class WriteBuffer:
    """The rows of one task, which holds every row of the shards it is given (``shards`` in all)."""

    def __init__(self, primary_keys: list[str], shards: int, limit_bytes: float, workdir: str | None = None):
        self.primary_keys, self.shards, self.limit = primary_keys, shards, limit_bytes
        self.rows_per_shard = np.zeros(shards, dtype=np.int64)
        self._workdir = workdir
        self._batches: list[pa.RecordBatch] = []
        self._parts: list[np.ndarray] = []  # per held batch: each row's part
        self._bytes = 0
        self._spill_dir: str | None = None
        self.runs: Runs | None = None

    @property
    def spilled(self) -> bool:
        return self.runs is not None

    def spill_directory(self) -> str:
        """A local directory of the task's own, removed with the buffer."""
        if self._spill_dir is None:
            self._spill_dir = tempfile.mkdtemp(prefix="paimon-spill-", dir=self._workdir)
        return self._spill_dir

    def extend(self, batches: Iterable[pa.RecordBatch]) -> "WriteBuffer":
        """Take the task's input (once)."""
        if self._batches or self.spilled:
            raise InternalError("a write buffer takes its input once")
        for batch in batches:
            if batch.num_rows == 0:
                continue
            self._batches.append(batch)
            self._parts.append(self._parts_of(batch))
            self._bytes += batch.nbytes
            if self._bytes > self.limit:
                self._flush()
        if self.spilled and self._batches:
            self._flush()
        return self

    def _parts_of(self, batch: pa.RecordBatch) -> np.ndarray:
        """Each row's part, pmod(key hash, shards·SPLITS): part p holds rows of shard p mod shards (the same
        hash, the shard count dividing the part count)."""
        parts = shard_of(batch, self.primary_keys, self.shards * SPLITS)
        self.rows_per_shard += np.bincount(parts % self.shards, minlength=self.shards)
        return parts

    def _flush(self) -> None:
        if self.runs is None:
            self.runs = Runs(self.spill_directory())
        self.runs.add(pa.Table.from_batches(self._batches), np.concatenate(self._parts))
        self._batches, self._parts, self._bytes = [], [], 0

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
        assert self.runs is not None  # called only once spilled
        runs = self.runs
        group: list[int] = []
        size = 0
        for part in range(shard, self.shards * SPLITS, self.shards):
            if not runs.bytes[part]:
                continue
            if group and size + runs.bytes[part] > self.limit:
                yield all_nullable(runs.read(group))
                group, size = [], 0
            group.append(part)
            size += runs.bytes[part]
        if group:
            yield all_nullable(runs.read(group))

    def close(self) -> None:
        if self._spill_dir:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
        self._spill_dir, self.runs, self._batches, self._parts = None, None, [], []

    def __enter__(self) -> "WriteBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def all_nullable(rows: pa.Table) -> pa.Table:
    """Every field nullable, as Spark's groupBy().applyInArrow() hands them over: the engine's tables mix both."""
    return rows.cast(pa.schema([f.with_nullable(True) for f in rows.schema]))
