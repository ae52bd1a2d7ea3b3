"""The index's shard of a key is the Spark partition repartition(shards, *primary_keys) sends it to."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest

from airflow_paimon.engine.index.sharding import shard_of, spark_hash

pytestmark = pytest.mark.spark


def _every_key_type(n: int = 600) -> pa.Table:
    rng = np.random.default_rng(1)
    text = ["", "a", "ab", "abc", "abcd", "abcde", "ünï", "日本語テキスト", "x" * 37] + [
        "".join(chr(c) for c in rng.integers(32, 0x3000, rng.integers(0, 20))) for _ in range(n - 9)]
    return pa.table({
        "b": pa.array(rng.integers(0, 2, n).astype(bool)),
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
        "i16": pa.array(rng.integers(-30000, 30000, n), pa.int16()),
        "i32": pa.array(rng.integers(-2**31, 2**31, n), pa.int32()),
        "i64": pa.array(rng.integers(-2**63, 2**63, n, dtype=np.int64), pa.int64()),
        "f32": pa.array(np.concatenate([[0.0, -0.0, np.nan, np.inf], rng.normal(size=n - 4)]).astype(np.float32)),
        "f64": pa.array(np.concatenate([[0.0, -0.0, np.nan, -np.inf], rng.normal(size=n - 4)])),
        "d": pa.array(np.arange(n, dtype=np.int32) * 97 - 20000, pa.int32()).cast(pa.date32()),
        "ts": pa.array(rng.integers(-2**50, 2**50, n), pa.int64()).cast(pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**12, 10**12, n)],
                        pa.decimal128(18, 2)),
        "dec38": pa.array([decimal.Decimal(int(x) * int(y)) / 1000 for x, y in
                           zip(rng.integers(-10**17, 10**17, n), rng.integers(-10**12, 10**12, n))],
                          pa.decimal128(38, 3)),
        "s": pa.array(text),
        "bin": pa.array([s.encode()[:13] for s in text], pa.binary()),
        "ns": pa.array([None if i % 3 == 0 else s for i, s in enumerate(text)]),
    })


@pytest.mark.parametrize("columns", [["b"], ["i8"], ["i16"], ["i32"], ["i64"], ["f32"], ["f64"], ["d"], ["ts"],
                                     ["dec"], ["dec38"], ["s"], ["bin"], ["ns"], ["i32", "s"],
                                     ["s", "i64", "d"], ["ns", "dec38", "i32"]])
def test_spark_hash_matches_spark(spark, columns):
    from pyspark.sql import functions as F

    table = _every_key_type()
    expected = [r[0] for r in spark.createDataFrame(table).select(F.hash(*columns)).collect()]
    assert spark_hash([table.column(c) for c in columns]).tolist() == expected


@pytest.mark.parametrize("shards", [1, 4, 7])
def test_shard_is_the_spark_partition(spark, shards):
    from pyspark.sql import functions as F

    table = _every_key_type().select(["i32", "s", "ts"])
    placed = (spark.createDataFrame(table).repartition(shards, "i32", "s", "ts")
              .select(F.spark_partition_id().alias("partition"), "i32", "s", "ts").toArrow())
    assert shard_of(placed, ["i32", "s", "ts"], shards).tolist() == placed.column("partition").to_pylist()


def test_a_task_of_fewer_than_shards_holds_whole_shards(spark):
    """repartition(2) of the key columns sends shard s of 4 to task s % 2 (pmod(h, 4) mod 2 == pmod(h, 2))."""
    from pyspark.sql import functions as F

    table = _every_key_type().select(["i64", "s"])
    placed = (spark.createDataFrame(table).repartition(2, "i64", "s")
              .select(F.spark_partition_id().alias("task"), "i64", "s").toArrow())
    assert (shard_of(placed, ["i64", "s"], 4) % 2).tolist() == placed.column("task").to_pylist()
