"""Table identifiers: only plain ``database.table`` reaches the catalog or a path this provider derives."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table

BAD = ["demo.orders/../..", "demo.orders/x", "demo\\orders.t", "..", "demo..orders", "demo", "a.b.c", ".orders",
       "demo.", "demo.ord\x00ers", "demo.ord\ners", "demo.orders$branch_dev", "demo.orders$snapshots", " demo.t",
       "demo.t ", "", "x" * 300 + ".t/..",
       # pyarrow percent-decodes file:// URIs: this one's index/staging/result paths were the warehouse root
       "db.t%2F%2E%2E%2F%2E%2E%2F%2E%2E", "db.t%23x", "db.t#x", "db.t?x", "db.t x", "db.t\u00a0x", "db.t\u2028x",
       "db.-t", "-db.t", "db.tä", "db.t*", "db.t:x"]


@pytest.mark.parametrize("name", BAD)
def test_bad_identifiers_are_refused_naming_the_value(name):
    with pytest.raises(ValidationError, match="invalid table identifier") as err:
        validate_identifier(name)
    assert repr(name[:200])[:-1] in str(err.value)
    assert len(str(err.value)) < 400  # a long name is cut, not echoed whole


@pytest.mark.parametrize("name", ["demo.orders", "db.t", "my_db.Orders-2026", "d.t1"])
def test_plain_identifiers_pass(name):
    assert validate_identifier(name) == name


def test_traversal_never_opens_a_table_nor_derives_a_path(tmp_path):
    warehouse = str(tmp_path / "wh")
    options = {"warehouse": warehouse}
    spec = TableSpec([("id", "BIGINT"), ("v", "DOUBLE")], ["id"], [], {"bucket": "1"})
    table = get_or_create_table(options, "demo.orders", spec)
    write = table.new_batch_write_builder()
    w = write.new_write()
    w.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": [1.0]}, schema=spec.arrow_schema()))
    write.new_commit().commit(w.prepare_commit())
    w.close()
    before = sorted(os.listdir(os.path.join(warehouse, "demo.db", "orders")))
    for call in (lambda: get_table(options, "demo.orders/../.."),
                 lambda: get_or_create_table(options, "demo.orders/..", spec),
                 lambda: layout.index_dir(warehouse + "/index", "demo.orders/../..")):
        with pytest.raises(ValidationError, match="path separator"):
            call()
    assert sorted(os.listdir(os.path.join(warehouse, "demo.db", "orders"))) == before


@pytest.mark.parametrize("name, why", [("db.t%2F%2E%2E", "'%'"), ("db.t#x", "'#'"), ("db.t?x", "'?'"),
                                       ("db.t x", "whitespace"), ("db.tä", "ASCII letters")])
def test_refusals_say_why(name, why):
    with pytest.raises(ValidationError, match=why):
        validate_identifier(name)
