"""A single parquet source file is read with its footer's schema (no Spark inference job); it must read
exactly as Spark's own inference would, and types pyarrow and Spark may see differently fall back."""
from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_paimon.spark.source import _parquet_file_schema, read_source

pytestmark = pytest.mark.spark


def test_parquet_file_reads_as_spark_infers_it(spark, tmp_path):
    table = pa.table({
        "id": pa.array([1, 2], pa.int64()), "small": pa.array([1, None], pa.int16()), "ok": [True, False],
        "name": ["a", None], "raw": pa.array([b"x", b"yz"]), "v": [1.5, None],
        "day": pa.array([datetime.date(2026, 1, 1), None]),
        "at": pa.array([datetime.datetime(2026, 1, 1, 12), None], pa.timestamp("us")),
        "at_utc": pa.array([datetime.datetime(2026, 1, 1, 12), None], pa.timestamp("ms", "UTC")),
        "amount": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2))})
    path = str(tmp_path / "batch.parquet")
    pq.write_table(table, path)
    assert _parquet_file_schema(path, "db.t") is not None
    ours, inferred = read_source(spark, {"path": path}, "db.t"), spark.read.parquet(path)
    assert ours.schema == inferred.schema
    assert sorted(map(tuple, ours.collect())) == sorted(map(tuple, inferred.collect()))


def test_directories_and_nanosecond_timestamps_are_left_to_spark(tmp_path):
    path = str(tmp_path / "ns.parquet")
    pq.write_table(pa.table({"at": pa.array([1], pa.timestamp("ns"))}), path)
    assert _parquet_file_schema(path, "db.t") is None
    assert _parquet_file_schema(str(tmp_path), "db.t") is None


def test_a_column_another_writer_added_is_null_for_a_source_without_it(spark, tmp_path):
    """engine/table/schema_evolution.py hands over the table columns the run's source may lack (another evolving
    write added them after this run planned); any other missing column is still refused."""
    from airflow_paimon.engine.errors import ValidationError
    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
    from airflow_paimon.spark.source import validate_and_cast

    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["v", "DOUBLE"], ["added", "DECIMAL(10, 2)"]],
                                "primary_keys": ["id"], "options": {"bucket": "1"}})
    table = get_or_create_table({"warehouse": str(tmp_path / "w")}, "db.t", spec)
    source = spark.createDataFrame([(1, 1.5), (2, None)], "id bigint, v double")
    rows = validate_and_cast(source, table, "db.t", absent=("added",))
    assert rows.schema["added"].dataType.simpleString() == "decimal(10,2)"
    assert [(r.id, r.v, r.added) for r in rows.orderBy("id").collect()] == [(1, 1.5, None), (2, None, None)]
    with pytest.raises(ValidationError, match="source lacks this column"):
        validate_and_cast(source, table, "db.t")


def test_the_rows_runs_as_of_a_later_instant_supersede_are_left_out_as_the_engine_leaves_them(spark):
    """spark/assign_write.py's joins leave out the rows of keys later runs wrote and of partitions they overwrote,
    and count the keys per snapshot, as engine/commit/ordering.py does on Arrow (the in-process runner's)."""
    from airflow_paimon.engine.commit.ordering import SNAPSHOT, Superseding, left_out_arrow
    from airflow_paimon.spark.assign_write import without_superseded

    source = pa.table({"id": pa.array([1, 2, 3, 4, 5, 5], pa.int64()), "dt": ["a", "b", "b", "c", "c", "c"],
                       "v": [1.0, 2.0, 3.0, 4.0, 5.0, 5.5]})
    found = Superseding(["id"], pa.table({"id": [1, 4, 9], SNAPSHOT: [7, 8, 8]}),  # key 4 also in an overwritten c
                        pa.table({"dt": ["c"], SNAPSHOT: [9]}), None, {})
    kept, left = without_superseded(spark, spark.createDataFrame(source.to_pandas()), found)
    expected, expected_left = left_out_arrow(source, found)
    assert sorted(map(tuple, kept.collect())) == sorted(zip(*expected.to_pydict().values()))
    assert left == expected_left == {7: 1, 8: 1, 9: 1}  # 1 by its key; 4 by its key first; 5 (twice) by c
    whole = Superseding(["id"], None, None, 9, {})
    assert without_superseded(spark, spark.createDataFrame(source.to_pandas()), whole)[1] == {9: 5}
    assert left_out_arrow(source, whole)[1] == {9: 5}
