"""shard_of() is Spark's hash partitioning of the primary-key columns (checked against Spark itself in
tests/spark/test_sharding.py); these pin values so the scheme never changes silently."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.index.sharding import shard_of, spark_hash


def test_known_spark_hash_values():
    # Spark SQL: SELECT hash(1L), hash(2L), hash(3L), hash('a'), hash(1L, 'a')
    assert spark_hash([pa.array([1, 2, 3], pa.int64())]).tolist() == [-1712319331, -797927272, 519220707]
    assert spark_hash([pa.array(["a"])]).tolist() == [1485273170]
    assert spark_hash([pa.array([1], pa.int64()), pa.array(["a"])]).tolist() == [573093329]


def test_shards_in_range_and_spread():
    shards = shard_of(pa.table({"id": pa.array(np.arange(1000), pa.int64())}), ["id"], 4)
    assert shards.min() >= 0 and shards.max() < 4
    assert np.bincount(shards).min() > 150


def test_null_leaves_the_hash_unchanged():
    with_null = spark_hash([pa.array([None, "x"]), pa.array([7, 7], pa.int32())])
    alone = spark_hash([pa.array([7], pa.int32())])
    assert with_null[0] == alone[0] and with_null[1] != alone[0]


def test_chunked_and_sliced_columns_hash_like_plain_ones():
    values = pa.array(["abc", "defgh", "", "ijklmnop", "q"])
    assert (spark_hash([pa.chunked_array([values.slice(0, 2), values.slice(2)])]) == spark_hash([values])).all()
    assert (spark_hash([values.slice(1, 3)]) == spark_hash([values])[1:4]).all()


def test_unsupported_type_is_refused():
    with pytest.raises(ValidationError, match="cannot be sharded"):
        spark_hash([pa.array([[1]], pa.list_(pa.int32()))])


@pytest.mark.parametrize("shards, cores, tasks", [(4, 2, 2), (4, 8, 4), (6, 4, 3), (5, 2, 1), (4, 0, 1), (1, 2, 1)])
def test_assign_tasks_divide_the_shards_and_fit_the_cores(shards, cores, tasks):
    from airflow_paimon.spark.pipelines.cross_partition import task_count

    assert task_count(shards, cores) == tasks


def test_nanosecond_timestamps_hash_as_the_microseconds_spark_holds():
    nanos = pa.array([1_000_000_123, -1_000_000_000], pa.timestamp("ns"))
    micros = pa.array([1_000_000, -1_000_000], pa.timestamp("us"))
    assert spark_hash([nanos]).tolist() == spark_hash([micros]).tolist()


def test_rows_in_the_wrong_assign_task_are_refused():
    from types import SimpleNamespace

    from airflow_paimon.engine.errors import InternalError
    from airflow_paimon.engine.write.buffer import WriteBuffer
    from airflow_paimon.spark.pipelines.cross_partition import check_shards_of_task

    rows = pa.table({"id": pa.array(np.arange(100), pa.int64())})
    ctx = SimpleNamespace(shards=4, identifier="db.t")
    mine = rows.filter(pa.array(shard_of(rows, ["id"], 4) % 2 == 1))
    counts = WriteBuffer(["id"], 4, 1 << 20).extend(mine.to_batches()).rows_per_shard
    assert counts.sum() == mine.num_rows and counts[[0, 2]].sum() == 0
    check_shards_of_task(counts, ctx, 1, 2)
    with pytest.raises(InternalError, match=rf"table db.t: {mine.num_rows} rows reached Spark task 0 of 2"):
        check_shards_of_task(counts, ctx, 0, 2)
