"""The ALTER rules (engine/table/table_alter.py), pure: which column changes are widenings, which options may change,
and that an ALTER already applied plans no change."""
from __future__ import annotations

import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table_alter import check_added_column, check_column_change, parse_type, plan_alter

COLUMNS = {"id": "BIGINT NOT NULL", "dt": "STRING", "n": "INT", "f": "FLOAT", "s": "VARCHAR(10)",
           "d": "DECIMAL(10, 2)"}


@pytest.mark.parametrize("old,new", [("INT", "BIGINT"), ("INTEGER", "BIGINT"), ("FLOAT", "DOUBLE"),
                                     ("VARCHAR(10)", "VARCHAR(20)"), ("VARCHAR(10)", "STRING"),
                                     ("DECIMAL(10,2)", "DECIMAL(12, 2)"), ("int not null", "BIGINT")])
def test_widenings_are_allowed(old, new):
    assert check_column_change("db.t", "c", old, new) is True


@pytest.mark.parametrize("old,new", [("BIGINT", "INT"), ("DOUBLE", "FLOAT"), ("VARCHAR(20)", "VARCHAR(10)"),
                                     ("STRING", "VARCHAR(10)"), ("DECIMAL(12,2)", "DECIMAL(10,2)"),
                                     ("DECIMAL(10,2)", "DECIMAL(12,3)"), ("DECIMAL(30,2)", "DECIMAL(39,2)"),
                                     ("INT", "STRING"), ("INT", "DOUBLE"), ("DATE", "TIMESTAMP(3)"),
                                     ("CHAR(3)", "CHAR(5)")])
def test_narrowing_or_other_types_are_refused_naming_table_column_and_type(old, new):
    with pytest.raises(ValidationError, match=r"table db\.t, column 'c'.*cannot change type") as e:
        check_column_change("db.t", "c", old, new)
    assert e.value.column == "c" and e.value.value == new


def test_same_type_is_no_change():
    assert check_column_change("db.t", "c", "INTEGER", "INT") is False
    assert check_column_change("db.t", "c", "STRING", "VARCHAR(2147483647)") is False
    assert str(parse_type("decimal(10, 2) not null")) == "DECIMAL(10,2) NOT NULL"


def test_added_columns_nullable_and_once():
    assert check_added_column("db.t", "x", "STRING", COLUMNS) is True
    assert check_added_column("db.t", "s", "varchar(10)", COLUMNS) is False  # there already: no change
    with pytest.raises(ValidationError, match="must be nullable"):
        check_added_column("db.t", "x", "INT NOT NULL", COLUMNS)
    with pytest.raises(ValidationError, match="column exists with type VARCHAR"):
        check_added_column("db.t", "s", "INT", COLUMNS)


def plan(**changes):
    return plan_alter("db.t", COLUMNS, ["id"], ["dt"], {"bucket": "-1", "target-file-size": "64 mb"}, **changes)


def test_plan_skips_what_the_table_has_already():
    assert not plan(set_options={"bucket": "-1", "target-file-size": "64 mb"}, reset_options=["absent"],
                    add_columns=[["s", "VARCHAR(10)"]], widen_columns=[["n", "INT"]])
    p = plan(set_options={"snapshot.num-retained.min": "3"}, reset_options=["target-file-size"],
             add_columns=[["x", "STRING"]], widen_columns=[["n", "BIGINT"]])
    assert p.describe() == ["set snapshot.num-retained.min=3", "reset target-file-size", "add column x STRING",
                            "widen column n to BIGINT"]


@pytest.mark.parametrize("changes,option", [({"set_options": {"bucket": "4"}}, "bucket"),
                                            ({"set_options": {"merge-engine": "first-row"}}, "merge-engine"),
                                            ({"set_options": {"primary-key": "dt"}}, "primary-key"),
                                            ({"set_options": {"partition": "id"}}, "partition"),
                                            ({"reset_options": ["bucket"]}, "bucket")])
def test_options_that_place_rows_never_change(changes, option):
    with pytest.raises(ValidationError, match=rf"option '{option}'.*cannot be (changed|reset)"):
        plan(**changes)


def test_key_columns_never_change_type_and_unknown_columns_are_named():
    with pytest.raises(ValidationError, match="column 'dt'.*primary-key or partition"):
        plan(widen_columns=[["dt", "STRING"]])
    with pytest.raises(ValidationError, match="column 'nope'.*no such column"):
        plan(widen_columns=[["nope", "BIGINT"]])
