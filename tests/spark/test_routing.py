"""repartition(n, route) puts shard s in Spark partition s, and per_group() hands each group over once."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_paimon.spark.routing import groups, per_group, routes

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


def test_groups_of_an_empty_table():
    assert list(groups(pa.table({"p": pa.array([], pa.string())}), ["p"])) == []
