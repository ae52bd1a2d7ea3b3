"""A cross-partition bucket whose keys hash to several Spark tasks (a table written by another writer, or with
another shard count): a table whose writes compact level 0 (deletion vectors, changelog-producer=lookup) must
still give each bucket one writer — two tasks each replacing the bucket's deletion vectors lose marks (the old
rows come back), two tasks each lifting level 0 into the same level overlap there."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.files.scan import file_path, latest_snapshot, live_entries
from airflow_paimon.engine.table.table import get_table
from deletion_vector_tables import assert_vectors_of_live_files
from oracle import assert_table_equals, expected_overwrite, expected_upsert, read_table
from spark.jobs import pipeline_on

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
MODES = {"deletion-vectors": {"deletion-vectors.enabled": "true"}, "lookup": {"changelog-producer": "lookup"},
         "plain": {}, "plain, spilled": {"write-buffer-size": "1 b"}}


@pytest.mark.parametrize("mode", MODES)
def test_a_bucket_of_every_task_is_written_once(spark, tmp_path, mode):
    warehouse = str(tmp_path / "wh")
    spec = {"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "100000", **MODES[mode]}}
    rng = np.random.default_rng(3)
    first = pd.DataFrame({"id": np.arange(2000), "dt": rng.choice(["a", "b"], 2000), "v": rng.random(2000)})
    # one shard: every key in bucket 0 of its partition
    pipeline_on(spark, warehouse, "db.t", spec, shards=1).upsert(first, "r1", tmp_path)
    # four shards over two Spark tasks: both tasks hold keys of bucket 0 (updates, and moves from b to a)
    second = pd.DataFrame({"id": np.arange(0, 2000, 3), "dt": "a", "v": -1.0})
    pipeline_on(spark, warehouse, "db.t", spec, shards=4).upsert(second, "r2", tmp_path)

    table = get_table({"warehouse": warehouse}, "db.t")
    assert_table_equals(table, expected_upsert([first, second], "id"), "id")
    assert_levels(table, mode)
    # the second run's write: one level-0 file per bucket (a deletion-vector write puts its DELETEs apart)
    manager = table.snapshot_manager()
    write = next(manager.get_snapshot_by_id(i) for i in range(manager.get_latest_snapshot().id, 0, -1)
                 if manager.get_snapshot_by_id(i).commit_kind == "APPEND")
    files = Counter((tuple(e.partition.values), e.bucket) for e in SnapshotReader(table).delta_entries(write)
                    if e.kind == 0 and not e.file.delete_row_count)
    assert files and max(files.values()) == 1, files

    # a partition overwrite of b through the same Spark jobs: keys moving in from a, new keys, b's others gone
    before = read_table(table)[["id", "dt", "v"]]
    backfill = pd.DataFrame({"id": np.concatenate([np.arange(0, 300, 3), np.arange(5000, 5100)]), "dt": "b", "v": 7.0})
    pipeline_on(spark, warehouse, "db.t", spec, shards=4).upsert(backfill, "r3", tmp_path, write_mode="overwrite")
    table = get_table({"warehouse": warehouse}, "db.t")
    actual = read_table(table)[["id", "dt", "v"]].sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected_overwrite(before, backfill, ["id"]), check_dtype=False)
    assert_levels(table, mode)


def assert_levels(table, mode: str) -> None:
    snapshot = latest_snapshot(table)
    assert_vectors_of_live_files(table, snapshot)  # one vector file per bucket, marking only live files
    # above level 0 each level is one sorted run: no two files' key ranges overlap
    if mode in ("deletion-vectors", "lookup"):
        ranges = {}
        for e in live_entries(table, snapshot):
            assert e.file.level > 0, "level-0 file left in a table whose writes compact level 0"
            keys = pq.ParquetFile(file_path(table, e)).read(columns=["_KEY_id"]).column(0)
            ranges.setdefault((tuple(e.partition.values), e.bucket, e.file.level), []).append(
                (pc.min(keys).as_py(), pc.max(keys).as_py()))
        for place, spans in ranges.items():
            spans.sort()
            assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), (place, spans)
