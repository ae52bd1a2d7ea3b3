"""Cross-partition (bucket -1, the key lacks a partition field): shuffle by key hash to the index shard, assign
there against the global key index, and write in the same task."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.assign.assigner import BUCKET
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.errors import InternalError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.memory import release_free_memory
from airflow_paimon.engine.runs.cross_partition import assign_and_write_shards, place_ids, places
from airflow_paimon.engine.write.buffer import Runs, WriteBuffer
from airflow_paimon.spark.connect import default_parallelism
from airflow_paimon.spark.pipelines.common import WRITTEN, writer
from airflow_paimon.spark.routing import groups

# A bucket's assigned rows from one assign task, as Arrow IPC, for the shuffle to the bucket's one writer
PLACE, PART = "_place", "_part"
PARTS = f"{PLACE} string, {PART} binary"
PARTS_ARROW = pa.schema([(PLACE, pa.string()), (PART, pa.binary())])


def pipeline(source, ctx: WriteContext):
    """Spark's hash partitioning of the key columns gives the shard (engine/index/sharding.py), so rows reach
    their shard's task with no Python pass before the shuffle. Each task assigns its shards and writes the
    rows itself, one file per (partition, bucket) — no second shuffle. With fewer cores than shards a task
    takes several shards (pmod(h, shards) mod n == pmod(h, n) when n divides shards), which saves task
    start-ups and files.

    A shard owns the buckets it assigns (bucket % shards == shard), so in a table this provider filled a bucket
    has one writer with no second shuffle: 100k rows into 5M here, 1.4 s against 1.7 s with one.

    A task holding more than ``write-buffer-size`` of rows spills them and assigns its shards a buffer at a
    time (engine/write/buffer.py); the assigned rows are spilled again by bucket, so each bucket is still
    written once per task (engine/runs/cross_partition.py).

    A table whose writes compact level 0 (deletion vectors, ``changelog-producer=lookup``) takes a second
    shuffle: that compaction rewrites the bucket's runs and its deletion-vector index file from the whole batch
    of the bucket, so a bucket must have exactly one writer, as in Paimon (assigned rows go to writers by
    partition and bucket). Two tasks marking the same old file would each replace the bucket's vectors.
    So does a table whose buckets hold keys of several shards (filled by another writer, or under another shard
    count): without it every task holding keys of a bucket would add a level-0 file to it each run, one sorted
    run per task, and compaction would be due every run or two (WriteContext.one_writer_per_bucket)."""
    from pyspark.sql import functions as F

    primary_keys, write, shards, buffer_size = ctx.primary_keys, writer(ctx), ctx.shards, ctx.write_buffer_bytes
    tasks = task_count(shards, default_parallelism(source.sparkSession))
    group_by = [*ctx.partition_keys, BUCKET]

    def assign_then(handle, stream: bool):
        """A mapInArrow function: the task's shards assigned, ``handle(assigned rows)`` -> tables to yield,
        streamed (``stream``) or gathered into one batch."""
        def run(batches):
            from pyspark import TaskContext

            with WriteBuffer(primary_keys, shards, buffer_size, spark_local_dir()) as buffer:
                buffer.extend(batches)
                task = TaskContext.get()
                assert task is not None  # on an executor, in a Spark task
                check_shards_of_task(buffer.rows_per_shard, ctx, task.partitionId(), tasks)
                out = []
                for table in assign_and_write_shards(ctx, buffer, handle):
                    if stream:  # a spilled task's buckets one at a time, not all of them at its end
                        yield from table.to_batches()
                    else:
                        out.append(table)
            # a second shuffle's writer task runs in this worker next: it starts from what the worker holds
            release_free_memory()
            crash_point("assign_write.task_written")
            if out:  # one batch back to the JVM for all the task's files rather than one per file
                yield from pa.concat_tables(out).to_batches()
        return run

    by_key = source.repartition(tasks, *[F.col(k) for k in primary_keys])
    if not ctx.one_writer_per_bucket:
        return by_key.mapInArrow(assign_then(lambda rows: [write(b) for b in groups(rows, group_by)], False),
                                 WRITTEN)
    assigned = by_key.mapInArrow(assign_then(lambda rows: [bucket_part(b, ctx.partition_keys)
                                                           for b in groups(rows, group_by)], True), PARTS)
    n = int(source.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    return assigned.repartition(n, PLACE).mapInArrow(write_places(write), WRITTEN)


def write_places(write):
    """The mapInArrow function of the second shuffle's writer task: the parts spilled to local Arrow files by
    place as they come, then each place written once from its parts, so the task holds one bucket's rows at a
    time. Spark sorts nothing: a sort by place held the parts in the JVM's execution memory, which took the
    JVM from 0.7 to 1.1-1.2 GiB (B = 10M into 20M, tests/benchmarks/README.md)."""
    def run(batches):
        with tempfile.TemporaryDirectory(prefix="paimon-parts-", dir=spark_local_dir()) as directory:
            by_place, ids = Runs(directory), dict[str, int]()
            for batch in batches:
                if batch.num_rows:
                    by_place.add(pa.Table.from_batches([batch]), place_ids(batch.column(PLACE), ids))
            for place in by_place.parts():
                yield from write(from_parts(by_place.read([place]))).to_batches()
    return run


def write_in_driver(source, ctx: WriteContext) -> list[dict]:
    """A small source assigned and written by the driver's Python itself, as one task holding every shard: no
    Python worker to start (their daemon imports the engine: 1-3 s of a small spark-submit), no shuffle, and
    each bucket has one writer (spark/pipelines/in_driver.py decides when)."""
    write, group_by = writer(ctx), [*ctx.partition_keys, BUCKET]
    with WriteBuffer(ctx.primary_keys, ctx.shards, ctx.write_buffer_bytes) as buffer:
        buffer.extend(source.toArrow().to_batches())
        written = list(assign_and_write_shards(ctx, buffer, lambda rows: [write(b) for b in groups(rows, group_by)]))
    crash_point("assign_write.task_written")
    return pa.concat_tables(written).to_pylist() if written else []


def from_parts(parts: pa.Table) -> pa.Table:
    """One bucket's rows from its PARTS rows."""
    return pa.concat_tables([pa.ipc.open_stream(p.as_buffer()).read_all() for p in parts.column(PART)])


def bucket_part(rows: pa.Table, partition_keys: list[str]) -> pa.Table:
    """One (partition, bucket)'s rows as a PARTS row: where they go, and the rows."""
    place = places(rows.slice(0, 1), partition_keys)[0].as_py()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as stream:
        stream.write_table(rows)
    return pa.table({PLACE: [place], PART: [sink.getvalue().to_pybytes()]}, schema=PARTS_ARROW)


def task_count(shards: int, parallelism: int) -> int:
    """Tasks for ``shards`` index shards: the most that divides the shard count and fits the cores."""
    return max(n for n in range(1, shards + 1) if shards % n == 0 and n <= max(1, parallelism))


def check_shards_of_task(rows_per_shard: np.ndarray, ctx: WriteContext, task: int, tasks: int) -> None:
    """Refuse rows whose shard is not this task's. A key in the wrong task would be written twice: Spark's
    partitioning and shard_of() must agree on every row."""
    wrong = int(rows_per_shard[np.arange(len(rows_per_shard)) % tasks != task].sum())
    if wrong:
        raise InternalError(f"table {ctx.identifier}: {wrong} rows reached Spark task {task} of {tasks} although "
                            "their key hashes elsewhere; Spark's hash partitioning and shard_of() disagree")


def spark_local_dir() -> str | None:
    """The worker's scratch space (spark.local.dir), for spill files."""
    dirs = os.environ.get("SPARK_LOCAL_DIRS", "")
    return dirs.split(",")[0] or None
