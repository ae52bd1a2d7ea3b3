"""Table identifiers: only plain ``database.table`` reaches the catalog or a path this provider derives."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.index.layout import table_index_uri
from airflow_paimon.engine.table import TableSpec, get_or_create_table, get_table

BAD = ["demo.orders/../..", "demo.orders/x", "demo\\orders.t", "..", "demo..orders", "demo", "a.b.c", ".orders",
       "demo.", "demo.ord\x00ers", "demo.ord\ners", "demo.orders$branch_dev", "demo.orders$snapshots", " demo.t",
       "demo.t ", "", "x" * 300 + ".t/.."]


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
    for call in (lambda: get_table(options, "demo.orders/../.."), lambda: get_or_create_table(options, "demo.orders/..", spec),
                 lambda: table_index_uri(warehouse + "/index", "demo.orders/../..")):
        with pytest.raises(ValidationError, match="path separator"):
            call()
    assert sorted(os.listdir(os.path.join(warehouse, "demo.db", "orders"))) == before
