"""One cross-partition assign-and-write task: the shards it holds assigned against the global index, their
rows written per (partition, bucket) in the same task (spark/pipelines/cross_partition.py, the tests' runner)."""
from __future__ import annotations

import os
from typing import Callable, Iterator, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.assigner import BUCKET
from airflow_paimon.engine.runs.assign_shard import shard_assigner
from airflow_paimon.engine.codec.keys import encode_partitions
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.memory import release_free_memory
from airflow_paimon.engine.write.buffer import Runs, WriteBuffer

Written = TypeVar("Written")


def assign_and_write_shards(ctx: WriteContext, buffer: WriteBuffer,
                            write: Callable[[pa.Table], list[Written]]) -> Iterator[Written]:
    """``write(assigned rows)`` writes them, one file per (partition, bucket) they hold; it is called once for
    the whole buffer when it is held in memory. A spilled buffer is assigned a chunk at a time, and its
    assigned rows spilled again by (partition, bucket), so each bucket is written once from its own rows:
    the task holds a chunk or a bucket, never the batch, and writes as many files as it would in memory.
    What ``write`` returns is yielded as it comes (a caller streams it on); consume it all, inside the
    buffer's block."""
    if not buffer.spilled:
        assigned = []
        for shard, chunks in buffer.shard_chunks():
            with shard_assigner(ctx, shard) as assign:
                assigned += [assign(chunk) for chunk in chunks]
        if assigned:
            yield from write(pa.concat_tables(assigned))
        return

    by_bucket = Runs(os.path.join(buffer.spill_directory(), "assigned"))
    groups: dict = {}
    for shard, chunks in buffer.shard_chunks():
        with shard_assigner(ctx, shard) as assign:
            for chunk in chunks:
                rows = assign(chunk)
                by_bucket.add(rows, place_ids(places(rows, ctx.partition_keys), groups))
        release_free_memory()  # the next shard starts from what this task holds, not this shard's high-water mark
    for group in by_bucket.parts():
        yield from write(by_bucket.read([group]))


def places(rows: pa.Table, partition_keys: list[str]) -> pa.Array:
    """Each row's (partition, bucket) as one string: its encoded partition and bucket."""
    return pc.binary_join_element_wise(encode_partitions(rows, partition_keys),
                                       rows.column(BUCKET).combine_chunks().cast(pa.string()), "\x00")


def place_ids(places_: pa.Array, groups: dict[str, int]) -> np.ndarray:
    """Each place (places()) as a number, the same for every call with the same ``groups`` (a task's chunks)."""
    encoded = places_.dictionary_encode()
    ids = np.array([groups.setdefault(p, len(groups)) for p in encoded.dictionary.to_pylist()], dtype=np.int64)
    return ids[np.asarray(encoded.indices.to_numpy(zero_copy_only=False))]
