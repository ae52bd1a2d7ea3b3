"""Bad input fails assign-and-write with a message naming table, column and value, before anything is
staged; the table stays as it was and a corrected re-run converges."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table import get_table
from oracle import assert_table_equals, expected_upsert, read_table
from spark.jobs import Jobs

pytestmark = pytest.mark.spark

SPEC = {"columns": [["id", "BIGINT"], ["dt", "DATE"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1"}}
GOOD = pd.DataFrame({"id": [1, 2], "dt": pd.to_datetime(["2026-01-01", "2026-01-02"]).date, "v": [1.0, 2.0]})


@pytest.fixture
def seeded(spark, warehouse, tmp_path):
    jobs = Jobs(spark, warehouse, "db.t", SPEC)
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
        Jobs(spark, warehouse, "db.missing").bootstrap()


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
    jobs = Jobs(spark, warehouse, "db.typed", TYPED)
    with pytest.raises(ValidationError) as err:
        jobs.assign_and_write(jobs.bootstrap(), {"path": write_json(tmp_path, row)}, "bad")
    message = str(err.value)
    assert "table db.typed" in message and f"column {column!r}" in message and problem in message
    assert f"value {value!r}" in message.replace('"', "'")
    assert get_table(jobs.options, "db.typed").snapshot_manager().get_latest_snapshot() is None


def test_timestamp3_takes_finer_values_truncated_to_milliseconds_as_paimon_stores_them(spark, warehouse, tmp_path):
    import datetime
    jobs = Jobs(spark, warehouse, "db.typed", TYPED)
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
