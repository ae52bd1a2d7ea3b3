"""Bad input fails assign-and-write with a message naming table, column and value, before anything is
staged; the table stays as it was and a corrected re-run converges."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table import get_table
from oracle import assert_table_equals, expected_upsert, read_table
from spark.jobs import pipeline_on

pytestmark = pytest.mark.spark

SPEC = {"columns": [["id", "BIGINT"], ["dt", "DATE"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1"}}
GOOD = pd.DataFrame({"id": [1, 2], "dt": pd.to_datetime(["2026-01-01", "2026-01-02"]).date, "v": [1.0, 2.0]})


@pytest.fixture
def seeded(spark, warehouse, tmp_path):
    jobs = pipeline_on(spark, warehouse, "db.t", SPEC)
    jobs.upsert(GOOD, "seed", tmp_path)
    return jobs


def write_json(tmp_path, text: str) -> str:
    path = tmp_path / "bad.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, column, value", [
    ('{"id": null, "dt": "2026-01-01", "v": 1.0}\n', "id", "None"),
    ('{"id": 3, "dt": "2026-01-01"}\n', "v", "None"),                       # missing column
    ('{"id": 3, "dt": "2026-13-45", "v": 1.0}\n', "dt", "2026-13-45"),      # not a date
    ('{"id": "three", "dt": "2026-01-01", "v": 1.0}\n', "id", "three"),     # not a bigint
    ('{"id": 3, "dt": "2026-01-01", "v": 1.0, "extra": 1}\n', "extra", "None"),
])
def test_bad_rows_and_columns(seeded, tmp_path, text, column, value):
    boot = seeded.bootstrap()
    with pytest.raises(ValidationError) as err:
        seeded.assign_and_write(boot, {"path": write_json(tmp_path, text)}, "bad")
    message = str(err.value)
    assert "table db.t" in message and f"column {column!r}" in message and f"value {value}" in message.replace("'", "")
    staging = os.path.join(seeded.warehouse, ".airflow-paimon", "staging", "db.t")
    assert all(not os.listdir(os.path.join(staging, d)) or "staged.json" not in os.listdir(os.path.join(staging, d))
               for d in os.listdir(staging) if d != _seed_user(seeded)), "nothing of the bad run is staged"
    table = get_table(seeded.options, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]
    assert_table_equals(table, expected_upsert([GOOD], "id"), "id")


def _seed_user(jobs) -> str:
    from airflow_paimon.engine.commit.identity import CommitIdentity
    return CommitIdentity.for_run("tests", "seed", "db.t").commit_user


def test_missing_source_path(seeded, tmp_path):
    with pytest.raises(ValidationError, match=r"table db.t, value '.*nowhere.parquet': source path does not exist"):
        seeded.assign_and_write(seeded.bootstrap(), {"path": str(tmp_path / "nowhere.parquet")}, "bad")


def test_unknown_table(spark, warehouse):
    with pytest.raises(ValidationError, match="table db.missing: table does not exist"):
        pipeline_on(spark, warehouse, "db.missing").bootstrap()


def test_rerun_after_fixing_the_input_converges(seeded, tmp_path):
    boot = seeded.bootstrap()
    with pytest.raises(ValidationError):
        seeded.assign_and_write(boot, {"path": write_json(tmp_path, '{"id": null, "dt": "2026-01-01", "v": 1}\n')},
                                "run")
    fixed = pd.DataFrame({"id": [1], "dt": pd.to_datetime(["2026-01-03"]).date, "v": [9.0]})
    seeded.upsert(fixed, "run", tmp_path)
    assert_table_equals(get_table(seeded.options, "db.t"), expected_upsert([GOOD, fixed], "id"), "id")


TYPED = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["n", "BIGINT"], ["name", "VARCHAR(5)"],
                     ["at", "TIMESTAMP(3)"]], "primary_keys": ["id"], "partition_keys": ["dt"],
         "options": {"bucket": "-1"}}


def _typed_row(**overrides) -> str:
    import json
    row = {"id": 3, "dt": "a", "n": 1, "name": "ok", "at": "2026-01-01 00:00:00.123", **overrides}
    return json.dumps(row) + "\n"


@pytest.mark.parametrize("row, column, value, problem", [
    (_typed_row(n=1.7), "n", "1.7", "not a whole number"),              # was silently stored as 1
    (_typed_row(n="2.5"), "n", "2.5", "does not fit the column type BIGINT"),
    (_typed_row(name="toolong"), "name", "toolong", "longer than the 5 characters"),
])
def test_values_a_cast_would_change_are_refused(spark, warehouse, tmp_path, row, column, value, problem):
    jobs = pipeline_on(spark, warehouse, "db.typed", TYPED)
    with pytest.raises(ValidationError) as err:
        jobs.assign_and_write(jobs.bootstrap(), {"path": write_json(tmp_path, row)}, "bad")
    message = str(err.value)
    assert "table db.typed" in message and f"column {column!r}" in message and problem in message
    assert f"value {value!r}" in message.replace('"', "'")
    assert get_table(jobs.options, "db.typed").snapshot_manager().get_latest_snapshot() is None


def test_timestamp3_takes_finer_values_truncated_to_milliseconds_as_paimon_stores_them(spark, warehouse, tmp_path):
    import datetime
    jobs = pipeline_on(spark, warehouse, "db.typed", TYPED)
    rows = _typed_row(id=1, at="2026-01-01 00:00:00.123456") + _typed_row(id=2, n=4.0, at="1969-12-31 23:59:59.999999")
    path = write_json(tmp_path, rows)
    jobs.commit(jobs.assign_and_write(jobs.bootstrap(), {"path": path}, "run"))
    got = read_table(get_table(jobs.options, "db.typed")).sort_values("id")
    assert got["n"].tolist() == [1, 4]  # 4.0 is a whole number: taken
    assert [t.to_pydatetime() for t in got["at"]] == [datetime.datetime(2026, 1, 1, 0, 0, 0, 123000),
                                                     datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)]


def test_a_long_bad_value_is_echoed_cut(seeded, tmp_path):
    long_id = "x" * 5000
    with pytest.raises(ValidationError) as err:
        seeded.assign_and_write(seeded.bootstrap(), {"path": write_json(
            tmp_path, '{"id": "%s", "dt": "2026-01-01", "v": 1.0}\n' % long_id)}, "bad")
    assert "column 'id'" in str(err.value) and len(str(err.value)) < 600


def test_a_headerless_csv_line_as_column_name_is_echoed_cut(seeded, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1," + "y" * 5000 + ",3\n")
    with pytest.raises(ValidationError) as err:
        seeded.assign_and_write(seeded.bootstrap(), {"path": str(path)}, "bad")
    assert "table db.t" in str(err.value) and len(str(err.value)) < 900


DECIMALS = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["amount", "DECIMAL(10, 2)"]], "primary_keys": ["id"],
            "partition_keys": ["dt"], "options": {"bucket": "-1"}}


@pytest.mark.parametrize("amount, shown", [
    (1.235, "1.235"),          # a double: Spark's cast rounds it to 1.24
    ("1.235", "1.235"),        # a string: rounded too
    ("-0.001", "-0.001"),      # would become 0.00
    (1e-30, "1.0E-30"),
])
def test_decimal_places_a_cast_would_round_are_refused(spark, warehouse, tmp_path, amount, shown):
    import json
    jobs = pipeline_on(spark, warehouse, "db.dec", DECIMALS)
    row = json.dumps({"id": 1, "dt": "a", "amount": amount}) + "\n"
    with pytest.raises(ValidationError) as err:
        jobs.assign_and_write(jobs.bootstrap(), {"path": write_json(tmp_path, row)}, "bad")
    message = str(err.value)
    assert message.startswith(f"table db.dec, column 'amount', value {shown!r}: value has more than 2 decimal places")
    assert get_table(jobs.options, "db.dec").snapshot_manager().get_latest_snapshot() is None


def test_exact_decimals_are_taken_from_every_source_type(spark, warehouse, tmp_path):
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq
    D = decimal.Decimal
    jobs = pipeline_on(spark, warehouse, "db.dec", DECIMALS)
    sources = {  # each column type holding values a DECIMAL(10, 2) keeps exactly
        "double": pa.array([1.23, 0.1, -7.5, 12345678.99]),
        "float": pa.array([1.25, 0.1, -7.5, 2.5], pa.float32()),  # 0.1f is the float nearest 0.1
        "decimal": pa.array([D("1.2300"), D("0.1000"), D("-7.5000"), D("99999999.9900")], pa.decimal128(14, 4)),
        "string": pa.array(["1.23", "0.10000", "-7.5", "1e2"]),
    }
    expected = {"double": ["1.23", "0.10", "-7.50", "12345678.99"], "float": ["1.25", "0.10", "-7.50", "2.50"],
                "decimal": ["1.23", "0.10", "-7.50", "99999999.99"], "string": ["1.23", "0.10", "-7.50", "100.00"]}
    for i, (kind, amounts) in enumerate(sources.items()):
        path = str(tmp_path / f"{kind}.parquet")
        ids = pa.array([10 * i + k for k in range(4)], pa.int64())
        pq.write_table(pa.table({"id": ids, "dt": ["a"] * 4, "amount": amounts}), path)
        jobs.commit(jobs.assign_and_write(jobs.bootstrap(), {"path": path}, f"run-{kind}"))
    got = read_table(get_table(jobs.options, "db.dec")).sort_values("id")
    assert got["amount"].tolist() == [D(v) for kind in sources for v in expected[kind]]


def test_more_places_in_a_decimal_source_are_refused_unless_zero(spark, warehouse, tmp_path):
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq
    jobs = pipeline_on(spark, warehouse, "db.dec", DECIMALS)
    path = str(tmp_path / "dec.parquet")
    pq.write_table(pa.table({"id": [1, 2], "dt": ["a", "a"], "amount": pa.array(
        [decimal.Decimal("1.2300"), decimal.Decimal("1.2350")], pa.decimal128(14, 4))}), path)
    with pytest.raises(ValidationError, match=r"^table db.dec, column 'amount', value '1.2350': value has more than 2"):
        jobs.assign_and_write(jobs.bootstrap(), {"path": path}, "bad")


def _assert_nothing_written(jobs, run_id: str = "bad"):
    """The bad run staged nothing and the table is as seeded."""
    from airflow_paimon.engine.commit.identity import CommitIdentity
    from airflow_paimon.engine.files import layout
    staged = layout.staging_dir(jobs.staging_root, jobs.table,
                                CommitIdentity.for_run("tests", run_id, jobs.table).commit_user)
    assert not os.path.exists(staged) or not os.listdir(staged), os.listdir(staged)
    table = get_table(jobs.options, jobs.table)
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]
    assert_table_equals(table, expected_upsert([GOOD], "id"), "id")


def _corrupt_pages(path) -> None:
    """A parquet file whose footer reads but whose data pages do not decode."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"id": pa.array(range(2000), pa.int64()), "dt": ["2026-01-01"] * 2000,
                             "v": [float(i) for i in range(2000)]}), path, compression="snappy")
    data = bytearray(path.read_bytes())
    for i in range(40, 4000):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("layout", ["not-parquet", "corrupt-pages", "directory-with-a-corrupt-file"])
def test_corrupt_parquet_is_refused_naming_table_and_file(seeded, tmp_path, layout):
    if layout == "not-parquet":
        source = bad = tmp_path / "bad.parquet"
        bad.write_bytes(b"id,dt,v\n1,2026-01-01,1.0\n" * 20)
    elif layout == "corrupt-pages":
        source = bad = tmp_path / "bad.parquet"
        _corrupt_pages(bad)
    else:
        source = tmp_path / "batch"
        source.mkdir()
        GOOD.to_parquet(source / "part-0.parquet", index=False)
        bad = source / "part-1.parquet"
        _corrupt_pages(bad)
    with pytest.raises(ValidationError) as err:
        seeded.assign_and_write(seeded.bootstrap(), {"path": str(source)}, "bad")
    assert str(err.value).startswith(f"table db.t, value {str(bad)!r}: source file is corrupt or not parquet")
    _assert_nothing_written(seeded)


def test_a_source_file_gone_while_read_is_not_called_bad_input(spark, tmp_path):
    """A file Spark fails to read that is not corrupt (here: deleted after planning, as an object store
    failing to serve it) is no input error: it stays an error that is retried."""
    from airflow_paimon.spark.source import read_source, validation_errors
    source = tmp_path / "batch"
    source.mkdir()
    GOOD.to_parquet(source / "part-0.parquet", index=False)
    GOOD.to_parquet(source / "part-1.parquet", index=False)
    df = read_source(spark, {"path": str(source)}, "db.t")
    (source / "part-1.parquet").unlink()
    with pytest.raises(Exception) as err:
        with validation_errors("db.t", {"path": str(source)}):
            df.collect()
    assert not isinstance(err.value, ValidationError) and "FAILED_READ_FILE" in str(err.value)


@pytest.mark.parametrize("kind", ["parquet", "json", "query"])
def test_source_columns_equal_but_for_case_are_refused(seeded, tmp_path, kind):
    if kind == "parquet":
        source = {"path": str(tmp_path / "dup.parquet")}
        pd.DataFrame({"ID": [3], "id": [4], "dt": pd.to_datetime(["2026-01-01"]).date, "v": [1.0]}).to_parquet(
            source["path"], index=False)
    elif kind == "json":
        source = {"path": write_json(tmp_path, '{"ID": 3, "id": 4, "dt": "2026-01-01", "v": 1.0}\n')}
    else:
        source = {"query": "SELECT 3 AS ID, 4 AS id, DATE'2026-01-01' AS dt, 1.0D AS v"}
    with pytest.raises(ValidationError) as err:
        seeded.assign_and_write(seeded.bootstrap(), source, "bad")
    message = str(err.value)
    assert message.startswith("table db.t, column ")
    if kind == "json":  # Spark's reader names one of them
        assert "column 'id'" in message and "twice" in message and source["path"] in message
    else:
        assert "['ID', 'id'] clash" in message
    _assert_nothing_written(seeded)
