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
    """engine/schema_evolution.py hands over the table columns the run's source may lack (another evolving
    write added them after this run planned); any other missing column is still refused."""
    from airflow_paimon.engine.errors import ValidationError
    from airflow_paimon.engine.table import TableSpec, get_or_create_table
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
