"""engine/files/layout.py: every path the provider writes or deletes outside a table is a root plus checked segments,
proven inside the root as the file system resolves it — plain paths, file:// and object-store URIs alike."""
from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
CRAFTED = "db.t%2F%2E%2E%2F%2E%2E%2F%2E%2E"


def tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


@pytest.mark.parametrize("root", ["/wh/.airflow-paimon/staging", "file:///wh/.airflow-paimon/staging",
                                  "s3://lake/wh/.airflow-paimon/staging"])
def test_paths_come_only_from_safe_segments(root):
    assert layout.staging_dir(root, "db.t", "airflow-paimon-ab12") == root + "/db.t/airflow-paimon-ab12"
    assert layout.index_dir(root, "db.t") == root + "/db.t"
    for table in (CRAFTED, "db.t#x", "db.t?x", "db.t/../x"):
        with pytest.raises(ValidationError, match="invalid table identifier"):
            layout.staging_dir(root, table)
    for segment in ("..", ".", "a/b", "a%2Fb", "a#b", "a?b", "", " a", "a\nb", "x/../.."):
        with pytest.raises(ValidationError, match="safe path segment"):
            layout.under(root, segment)


def test_file_uri_containment_is_judged_on_the_decoded_path(tmp_path):
    """pyarrow's from_uri decodes %2F and %2E: an encoded escape is an escape."""
    root = f"file://{tmp_path}/staging"
    assert storage.resolved(f"{root}/db.t%2F%2E%2E%2F%2E%2E") == str(tmp_path)
    assert not storage.within(root, f"{root}/db.t%2F%2E%2E%2F%2E%2E%2Fdemo.db")
    assert not storage.within(root, f"{root}/x%2F..%2F..")
    assert storage.resolved(f"{root}/db.t#x") == storage.resolved(f"{root}/db.t")  # what pyarrow opens
    assert storage.within(root, f"{root}/db.t/u")


def test_an_encoded_escape_deletes_nothing_on_a_file_warehouse(tmp_path):
    (tmp_path / "wh" / "demo.db" / "t").mkdir(parents=True)
    (tmp_path / "wh" / "demo.db" / "t" / "snapshot-1").write_text("x")
    (tmp_path / "wh" / ".airflow-paimon" / "staging").mkdir(parents=True)
    root = f"file://{tmp_path}/wh/.airflow-paimon/staging"
    for uri in (f"{root}/db.t%2F%2E%2E%2F%2E%2E%2Fdemo.db", f"{root}/%2E%2E%2F%2E%2E"):
        with pytest.raises(storage.EscapeError):
            storage.delete_dir_within(root, uri)
    assert (tmp_path / "wh" / "demo.db" / "t" / "snapshot-1").exists()


def test_safe_segment_never_merges_two_names():
    names = ["manual__2026-11-23T00:00:00+00:00", "manual__2026-11-23T00_00_00_00_00", "a:b", "a_b", "..", ".x",
             "", "scheduled__2026-11-23"]
    segments = [layout.safe_segment(n) for n in names]
    assert len(set(segments)) == len(names)
    assert layout.safe_segment("scheduled__2026-11-23") == "scheduled__2026-11-23"  # a safe name is kept as is
    for s in segments:
        assert layout.check_segment(s) == s


def test_result_file_layout():
    uri = layout.result_file("/r", "dag", "manual__2026-11-23T00:00:00+00:00", "commit", -1, 2)
    dag, run, name = uri.split("/")[-3:]
    assert (uri.startswith("/r/dag/"), name) == (True, "commit--1-try2.json") and run.startswith("manual__2026")
    assert layout.dag_results_dir(uri) == "/r/dag" and layout.is_result_file(name)
    marker = layout.rollback_marker("/r", "dag", "r1", "rollback", 3)
    assert marker == "/r/dag/r1/rollback-3-rollback.json" and layout.dag_results_dir(marker) == "/r/dag"


def test_index_and_staged_index_names():
    assert [layout.indexed_snapshot(layout.index_snapshot_dir(s)) for s in (None, 0, 7)] == [0, 0, 7]
    assert [layout.indexed_snapshot(n) for n in ("snapshot-x", "manifest.json", "snapshot-3.tmp")] == [None] * 3
    assert layout.index_manifest("/i/db.t", 7) == "/i/db.t/snapshot-7/manifest.json"
    published = layout.index_file(layout.index_snapshot_dir(7), layout.shard_file_name(3, "delta", "user-1"))
    assert published == "snapshot-7/shard-00003-delta-user-1.sst" and layout.index_file_dir(published) == "snapshot-7"
    assert layout.is_shard_file(published) and not layout.is_shard_file(layout.INDEX_MANIFEST)
    staged = [layout.staged_shard_file("/s/db.t/u", 3, "full"), layout.staged_shard_meta("/s/db.t/u", 3)]
    assert staged == ["/s/db.t/u/index/shard-00003-full.sst", "/s/db.t/u/index/shard-00003.json"]
    assert [layout.is_staged_shard_meta(p.rsplit("/", 1)[1]) for p in staged] == [False, True]


def test_crafted_table_on_a_file_warehouse_is_refused_before_anything(tmp_path):
    """The reproduction: bootstrap → write → commit of CRAFTED on a file:// warehouse deleted demo.db."""
    warehouse = f"file://{tmp_path}/wh"
    opts = {"warehouse": warehouse}
    first = pd.DataFrame({"id": [1, 2, 3], "dt": list("aab"), "v": [1.0, 2.0, 3.0]})
    get_or_create_table(opts, "demo.orders", SPEC)
    upsert(bootstrap(opts, "demo.orders", layout.default_root(warehouse, "index"), 2),
           pa.Table.from_pandas(first, schema=SPEC.arrow_schema(), preserve_index=False), run_id="first")
    before = tree(tmp_path / "wh")
    for call in (lambda: get_or_create_table(opts, CRAFTED, SPEC),
                 lambda: bootstrap(opts, CRAFTED, layout.default_root(warehouse, "index"), 2)):
        with pytest.raises(ValidationError, match="'%'"):
            call()
    assert tree(tmp_path / "wh") == before
    assert_table_equals(get_table(opts, "demo.orders"), expected_upsert([first], "id"), "id")


def test_a_file_warehouse_runs_and_cleans_its_staging(tmp_path):
    """Plain names on a file:// warehouse: index, staging and clean-up resolve where pypaimon's table does."""
    warehouse = f"file://{tmp_path}/wh"
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    batches = [pd.DataFrame({"id": [1, 2, 3], "dt": list("aab"), "v": [1.0, 2.0, 3.0]}),
               pd.DataFrame({"id": [2, 4], "dt": list("ba"), "v": [20.0, 4.0]})]
    for i, batch in enumerate(batches):
        ctx = bootstrap(opts, "db.t", layout.default_root(warehouse, "index"), 2)
        upsert(ctx, pa.Table.from_pandas(batch, schema=SPEC.arrow_schema(), preserve_index=False), run_id=f"r{i}")
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(batches, "id"), "id")
    staging = tmp_path / "wh" / ".airflow-paimon" / "staging" / "db.t"
    assert not staging.exists() or not list(staging.iterdir())
    assert (tmp_path / "wh" / ".airflow-paimon" / "index" / "db.t").is_dir()
