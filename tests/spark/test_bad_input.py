"""Bad input fails assign-and-write with a message naming table, column and value, before anything is
staged; the table stays as it was and a corrected re-run converges."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table import get_table
from oracle import assert_table_equals, expected_upsert
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
