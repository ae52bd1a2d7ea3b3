"""One shard of the global key index: sorted SST files on storage, a RocksDB while a task works on it.

Key: the encoded primary key. Value: the key's bucket (4 bytes, big-endian) then its encoded partition,
like Paimon's GlobalIndexAssigner which keeps (partition id, bucket) per key.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rocksdict import Options, Rdict, SstFileWriter, WriteBatch


def encode_values(buckets: np.ndarray, partitions: pa.Array) -> pa.Array:
    """Index values for rows with these buckets and encoded partitions."""
    bucket_bytes = pa.Array.from_buffers(
        pa.binary(4), len(buckets), [None, pa.py_buffer(np.asarray(buckets, dtype=">i4").tobytes())])
    return pc.binary_join_element_wise(bucket_bytes.cast(pa.binary()), partitions.cast(pa.binary()), b"")


def decode_values(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(bucket, encoded partition) of non-null index values."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int32), pa.array([], pa.string())
    heads = pc.binary_slice(values, 0, 4).cast(pa.binary(4))
    buckets = np.frombuffer(heads.buffers()[1], dtype=">i4", count=len(values),
                            offset=heads.offset * 4).astype(np.int32)
    longest = pc.max(pc.binary_length(values)).as_py() or 4
    partitions = pc.binary_slice(values, 4, max(longest, 4)).cast(pa.string())
    return buckets, partitions


def _options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    return opts


def write_sst(keys: pa.Array, values: pa.Array, path: str) -> int:
    """Write (key, value) pairs as one sorted SST file; returns the key count (0 writes nothing)."""
    if len(keys) == 0:
        return 0
    order = pc.sort_indices(keys)
    keys, values = keys.take(order), values.take(order)
    writer = SstFileWriter(options=_options())
    writer.open(path)
    for k, v in zip(keys.to_numpy(zero_copy_only=False), values.to_numpy(zero_copy_only=False)):
        writer[k] = v
    writer.finish()
    return len(keys)


class ShardIndex:
    """A local RocksDB holding one shard; built by ingesting the shard's SST files."""

    def __init__(self, workdir: str | None = None):
        self._dir = tempfile.mkdtemp(prefix="paimon-index-", dir=workdir)
        self.db = Rdict(os.path.join(self._dir, "db"), _options())

    def ingest(self, sst_paths: list[str]) -> None:
        if sst_paths:
            self.db.ingest_external_file(list(sst_paths))

    def lookup(self, keys: pa.Array) -> pa.Array:
        """The index value of each key, null where the key is unknown."""
        if len(keys) == 0:
            return pa.array([], pa.binary())
        found = self.db.get(keys.to_numpy(zero_copy_only=False).tolist())
        return pa.array(found, pa.binary())

    def put(self, keys: pa.Array, values: pa.Array) -> None:
        batch = WriteBatch(raw_mode=True)
        for k, v in zip(keys.to_numpy(zero_copy_only=False), values.to_numpy(zero_copy_only=False)):
            batch.put(k, v)
        self.db.write(batch)

    def delete(self, keys: pa.Array) -> None:
        batch = WriteBatch(raw_mode=True)
        for k in keys.to_numpy(zero_copy_only=False):
            batch.delete(k)
        self.db.write(batch)

    def export_sst(self, path: str) -> int:
        """Write the whole shard, in key order, to one SST file; returns the key count."""
        writer, count = None, 0
        for k, v in self.db.items():
            if writer is None:
                writer = SstFileWriter(options=_options())
                writer.open(path)
            writer[k] = v
            count += 1
        if writer is not None:
            writer.finish()
        return count

    def close(self) -> None:
        self.db.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
