"""repartition(n, route) puts shard s in Spark partition s, and per_group() hands each group over once."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_paimon.spark.routing import groups, per_group, per_sorted_group, routes

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("n", [1, 2, 4, 7, 16])
def test_route_values_land_in_their_partition(spark, n):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(int(r), s) for s, r in enumerate(routes(n))], "route int, shard int")
    placed = df.repartition(n, "route").select("shard", F.spark_partition_id().alias("partition")).collect()
    assert sorted((r["shard"], r["partition"]) for r in placed) == [(s, s) for s in range(n)]


def test_per_group_calls_once_per_group_nulls_included(spark):
    rows = [("a", 1), (None, 2), ("a", 3), ("b", 4), (None, 5)] * 3

    def summarise(group: pa.Table) -> pa.Table:
        return pa.table({"p": [group.column("p")[0].as_py()], "n": [group.num_rows],
                         "total": [sum(group.column("v").to_pylist())]})

    df = spark.createDataFrame(rows, "p string, v long").repartition(3, "p")
    out = df.mapInArrow(per_group(summarise, ["p"]), "p string, n long, total long").collect()
    assert sorted((r["p"] or "", r["n"], r["total"]) for r in out) == [("", 6, 21), ("a", 6, 12), ("b", 3, 12)]


def test_per_sorted_group_calls_once_per_group_across_batches(spark):
    """Spark sorts each task's rows by the group (nulls first); a group may span Arrow batches, a batch may hold
    several groups: each group is handed over once, whole, as soon as it ends."""
    rows = [("a", i) for i in range(7)] + [(None, 10), ("b", 20), ("c", 30), ("c", 31)]
    schema = pa.schema([("p", pa.string()), ("n", pa.int64()), ("total", pa.int64())])

    def summarise(group: pa.Table) -> pa.Table:
        return pa.table({"p": [group.column("p")[0].as_py()], "n": [group.num_rows],
                         "total": [sum(group.column("v").to_pylist())]}, schema=schema)

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "3")
    try:
        df = spark.createDataFrame(rows, "p string, v long").repartition(2, "p").sortWithinPartitions("p")
        out = df.mapInArrow(per_sorted_group(summarise, ["p"]), "p string, n long, total long").collect()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert sorted((r["p"] or "", r["n"], r["total"]) for r in out) == [("", 1, 10), ("a", 7, 21), ("b", 1, 20),
                                                                       ("c", 2, 61)]


def test_groups_of_an_empty_table():
    assert list(groups(pa.table({"p": pa.array([], pa.string())}), ["p"])) == []
