"""The Paimon page escapes every value it shows: table options, snapshot commit users, index manifests and staged
runs are files anyone with write access to the warehouse may have written, and the page is served to every
Airflow user. Read from a real table, manifest and staging; rendered as the api-server renders it."""
from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser

import pandas as pd
import pyarrow as pa
from airflow.models.connection import Connection

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.files import layout
from airflow_paimon.engine.index.layout import IndexManifest, ShardMeta, write_manifest
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.links import PAGE_PREFIX
from airflow_paimon.ui import render
from airflow_paimon.ui.connections import _LoadedHook
from airflow_paimon.ui.tables import table_view

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = "'><img src=x onerror=alert(2)>"  # leaves a single-quoted attribute if unescaped


class Markup(HTMLParser):
    """The elements, attribute names and text a browser would see in the page."""

    def __init__(self, html: str):
        super().__init__()
        self.tags, self.attributes, self.text = [], [], []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


def assert_shown_not_run(html: str, *values: str) -> None:
    page = Markup(html)
    assert not {"script", "img"} & set(page.tags), sorted(set(page.tags))
    assert not [a for a in page.attributes if a.startswith("on")]
    text = "".join(page.text)
    for value in values:
        assert value in text  # shown as text, verbatim


def test_table_page_escapes_options_commit_users_manifest_and_staged_fields(warehouse):
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"]], "primary_keys": ["id", "dt"],
                                "partition_keys": ["dt"],
                                "options": {"bucket": "2", "commit.user-prefix": SCRIPT, "note": BREAKOUT}})
    get_or_create_table({"warehouse": warehouse}, "db.t", spec)
    builder = get_table({"warehouse": warehouse}, "db.t").new_batch_write_builder()  # commit user: SCRIPT_<uuid>
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(pd.DataFrame({"id": [1, 2], "dt": ["a", "b"]}),
                                           schema=spec.arrow_schema(), preserve_index=False))
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    hook = _LoadedHook(Connection(conn_id="p", conn_type="paimon", extra=json.dumps({"warehouse": warehouse})))
    # an index manifest whose fields are markup (the issue: shards went into the page as it was)
    write_manifest(layout.index_dir(hook.index_root(), "db.t"),
                   IndexManifest(table="db.t", snapshot_id=1, schema_id=0, shards=SCRIPT, key_hash_scheme=SCRIPT,
                                 shard_meta=[ShardMeta(0, [], 2)], origin=BREAKOUT))
    staged = storage.join(hook.staging_root(), "db.t", "airflow-paimon-dead", "staged.json")
    storage.write_bytes_atomic(staged, json.dumps({"commit_user": BREAKOUT, "base_snapshot_id": 1,
                                                   "messages": []}).encode())
    view = table_view(hook, "p", "db.t", {})
    assert view.snapshots[0].commit_user.startswith(SCRIPT) and view.indexes[0].shards == SCRIPT
    html = render.table_page(view, PAGE_PREFIX)
    assert_shown_not_run(html, SCRIPT, BREAKOUT, f"{SCRIPT}_")
    index_row = html[html.index("<table id='index'>"):]
    assert "<td class='n'>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in index_row  # shards, escaped
    # a connection id and a table name are names a page only shows, never runs
    assert_shown_not_run(render.table_page(dataclasses.replace(view, conn_id=BREAKOUT, identifier=SCRIPT),
                                           PAGE_PREFIX), SCRIPT, BREAKOUT)


def test_overview_escapes_names_errors_and_whatever_a_count_holds():
    tables = [{"identifier": SCRIPT, "bucket_mode": BREAKOUT, "snapshot_id": SCRIPT, "records": BREAKOUT,
               "commit_kind": SCRIPT}]
    html = render.overview([{"conn_id": SCRIPT, "warehouse": BREAKOUT, "tables": tables, "error": SCRIPT}],
                           PAGE_PREFIX)
    assert_shown_not_run(html, SCRIPT, BREAKOUT)
    assert "<td class='n'>1,234</td>" in render.overview(
        [{"conn_id": "p", "warehouse": "w", "tables": [{**tables[0], "snapshot_id": 1234}]}], PAGE_PREFIX)
