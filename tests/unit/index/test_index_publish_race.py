"""Two publishers of one snapshot's index: the run that committed it (publish_index) and another run's bootstrap
catching up on it. Interleaved the worst way — the catch-up writes its shard files, the committer publishes and
cleans up (deleting the catch-up's files, which no manifest names), then the catch-up publishes — the index in
place must still be whole, and the next run must write against it."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.runs import commit as commit_run
from airflow_paimon.engine.runs import bootstrap_index as index_run
from airflow_paimon.engine.index.sharding import KEY_HASH_SCHEME
from airflow_paimon.engine.index.layout import IndexManifest, ShardMeta, publish_manifest, read_manifest, verify
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_upsert

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
BATCHES = [pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2, 3, 4]}),
           pd.DataFrame({"id": [2, 5, 6], "dt": list("bab"), "v": [20.0, 5, 6]}),
           pd.DataFrame({"id": [1, 6, 7], "dt": list("bba"), "v": [10.0, 60, 7]})]


def arrow(df):
    return pa.Table.from_pandas(df, schema=SPEC.arrow_schema(), preserve_index=False)


class Stop(Exception):
    pass


def test_a_catch_up_losing_to_the_committer_adopts_its_index(warehouse, monkeypatch):
    opts, index_root = {"warehouse": warehouse}, layout.default_root(warehouse, "index")
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(BATCHES[0]), run_id="r0")
    winner = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(BATCHES[1]), run_id="r1")

    def stop_before_publish(name):  # the winner's commit lands, its index is not out yet
        if name == "commit.before_publish":
            raise Stop()
    monkeypatch.setattr(commit_run, "crash_point", stop_before_publish)
    with pytest.raises(Stop):
        commit_run.run_commit(winner)
    monkeypatch.undo()

    def committer_publishes_first(name):  # the catch-up wrote its files; the winner's retry publishes now
        if name == "bootstrap.before_manifest":
            commit_run.run_commit(winner)
    monkeypatch.setattr(index_run, "crash_point", committer_publishes_first)
    loser = bootstrap(opts, "db.t", index_root, 2)  # caught up on the winner's snapshot
    monkeypatch.undo()

    index_uri = layout.index_dir(index_root, "db.t")
    published = read_manifest(index_uri, 2)
    assert published.origin == "committed" and verify(index_uri, published) is None
    upsert(loser, arrow(BATCHES[2]), run_id="r2")  # writes against the index in place
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(BATCHES, "id"), "id")


def test_publish_keeps_an_intact_index_and_replaces_a_broken_one(tmp_path):
    uri = str(tmp_path / "db.t")
    first = IndexManifest("db.t", 3, 0, 1, KEY_HASH_SCHEME, [ShardMeta(0)], origin="committed")
    second = IndexManifest("db.t", 3, 0, 1, KEY_HASH_SCHEME, [ShardMeta(0, keys=7)], origin="caught_up")
    assert publish_manifest(uri, first) == first
    assert publish_manifest(uri, second) == first  # the first publisher's index stays
    other_shards = IndexManifest("db.t", 3, 0, 2, KEY_HASH_SCHEME, [ShardMeta(0), ShardMeta(1)], origin="rebuilt")
    assert publish_manifest(uri, other_shards) == other_shards  # incompatible: replaced
    (tmp_path / "db.t" / "snapshot-3" / "manifest.json").write_text("{not json")
    assert publish_manifest(uri, second) == second and read_manifest(uri, 3) == second  # corrupt: replaced
