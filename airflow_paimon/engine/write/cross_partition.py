"""One cross-partition assign-and-write task: the shards it holds assigned against the global index, their
rows written per (partition, bucket) in the same task (spark/pipelines/cross_partition.py, the tests' runner)."""
from __future__ import annotations

from typing import Callable, TypeVar

import pyarrow as pa

from airflow_paimon.engine.assign.task import shard_assigner
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.write.buffer import WriteBuffer

Written = TypeVar("Written")


def assign_and_write_shards(ctx: WriteContext, buffer: WriteBuffer,
                            write: Callable[[pa.Table], list[Written]]) -> list[Written]:
    """``write(assigned rows)`` writes them, one file per (partition, bucket) they hold. A buffer held in memory
    is written once, after all its shards are assigned (a bucket reached from two shards gets one file); a
    spilled one chunk by chunk, so that only a buffer's worth of rows is ever held."""
    assigned, written = [], []
    for shard, chunks in buffer.shard_chunks():
        with shard_assigner(ctx, shard) as assign:
            for chunk in chunks:
                rows = assign(chunk)
                if buffer.spilled:
                    written += write(rows)
                else:
                    assigned.append(rows)
    if assigned:
        written += write(pa.concat_tables(assigned))
    return written
