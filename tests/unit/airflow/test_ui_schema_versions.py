"""The Paimon page shows a table's schema versions (what each changed) and its tags, read from Paimon's own
schema and tag files of a real table that went through ALTERs and a tag."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
from airflow.models.connection import Connection

from airflow_paimon.engine.table.lifecycle import alter_table, create_tag
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.links import PAGE_PREFIX
from airflow_paimon.ui import render
from airflow_paimon.ui.connections import _LoadedHook
from airflow_paimon.ui.tables import table_view

from tests.unit.airflow.test_ui_escaping import SCRIPT, assert_shown_not_run


def _commit(opts: dict, ids: list[int]) -> None:
    table = get_table(opts, "db.t")
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    frame = pd.DataFrame({"id": ids, "dt": ["a"] * len(ids), "v": [1.0] * len(ids)})
    write.write_arrow(pa.Table.from_pandas(frame, preserve_index=False).cast(
        pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                   pa.field("v", pa.float32())])))
    builder.new_commit().commit(write.prepare_commit())
    write.close()


def test_page_lists_schema_versions_with_their_changes_and_tags(warehouse):
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "FLOAT"]],
                                "primary_keys": ["id", "dt"], "partition_keys": ["dt"], "options": {"bucket": "1"}})
    get_or_create_table(opts, "db.t", spec)
    _commit(opts, [1, 2])
    create_tag(opts, "db.t", "day-1")
    alter_table(opts, "db.t", add_columns=[["note", "STRING"]], widen_columns=[["v", "DOUBLE"]])
    alter_table(opts, "db.t", set_options={"snapshot.num-retained.min": "5", "comment-ish": SCRIPT})
    table = get_table(opts, "db.t")
    assert table.table_schema.id == 2

    hook = _LoadedHook(Connection(conn_id="p", conn_type="paimon", extra=json.dumps(opts)))
    view = table_view(hook, "p", "db.t", {})
    assert [s.id for s in view.schemas] == [2, 1, 0]  # newest first
    assert view.schemas[2].changes == ["created"]
    assert sorted(view.schemas[1].changes) == ["added note STRING", "v: FLOAT to DOUBLE"]
    assert sorted(view.schemas[0].changes) == [f"set comment-ish={SCRIPT}", "set snapshot.num-retained.min=5"]
    assert [(t.name, t.snapshot_id) for t in view.tags] == [("day-1", 1)]

    html = render.table_page(view, PAGE_PREFIX)
    schemas = html[html.index("<table id='schemas'>"):]
    assert "added note STRING" in schemas and "v: FLOAT to DOUBLE" in schemas
    assert "<td><code>day-1</code></td><td class='n'>1</td>" in html[html.index("<table id='tags'>"):]
    assert_shown_not_run(html, f"set comment-ish={SCRIPT}")  # an option value is text, never markup


def test_a_table_without_tags_says_so(warehouse):
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"]], "primary_keys": ["id"], "options": {"bucket": "1"}})
    get_or_create_table(opts, "db.t", spec)
    hook = _LoadedHook(Connection(conn_id="p", conn_type="paimon", extra=json.dumps(opts)))
    view = table_view(hook, "p", "db.t", {})
    assert [(s.id, s.changes) for s in view.schemas] == [(0, ["created"])] and view.tags == []
    assert "No tags." in render.table_page(view, PAGE_PREFIX)
