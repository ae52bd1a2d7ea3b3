"""Declared tables: the types and options Paimon has are created as declared, or refused up front."""
from __future__ import annotations

import os

import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table


def spec(columns=(("id", "BIGINT"), ("name", "VARCHAR(10)"), ("code", "CHAR(3)")), options=None) -> TableSpec:
    return TableSpec(list(columns), ["id"], [], {"bucket": "-1", **(options or {})})


def test_varchar_and_char_are_created_as_declared_and_the_next_run_accepts_them(tmp_path):
    options = {"warehouse": str(tmp_path)}
    table = get_or_create_table(options, "db.t", spec())
    assert [str(f.type) for f in table.table_schema.fields] == ["BIGINT NOT NULL", "VARCHAR(10)", "CHAR(3)"]
    again = get_or_create_table(options, "db.t", spec())  # the next run compares with the same declaration
    assert again.table_schema.id == table.table_schema.id


@pytest.mark.parametrize("key, value, problem", [
    ("dynamic-bucket.target-row-num", "abc", "must be an integer"),
    ("dynamic-bucket.target-row-num", "0", "at least 1"),
    ("dynamic-bucket.target-row-num", "-5", "at least 1"),
    ("bucket", "0", "-1 (dynamic) or at least 1"),
    ("bucket", "-2", "-1 (dynamic) or at least 1"),
    ("bucket", "two", "must be an integer"),
    ("num-sorted-run.compaction-trigger", "1.5", "must be an integer"),
])
def test_bad_table_options_are_refused_before_the_table_is_created(tmp_path, key, value, problem):
    with pytest.raises(ValidationError) as err:
        get_or_create_table({"warehouse": str(tmp_path)}, "db.t", spec(options={key: value}))
    message = str(err.value)
    assert message.startswith("table db.t") and repr(key) in message and repr(value) in message and problem in message
    assert not os.path.exists(tmp_path / "db.db" / "t")
