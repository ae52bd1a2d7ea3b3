"""Partition values that collided in the index's partition encoding, and a corrupt index manifest."""
from __future__ import annotations

import glob
import os

import pandas as pd
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.table.table import get_table
from oracle import assert_table_equals, expected_upsert
from spark.jobs import pipeline_on

pytestmark = pytest.mark.spark

SPEC = {"columns": [["id", "BIGINT"], ["p", "STRING"], ["q", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["p", "q"], "options": {"bucket": "-1"}}


def test_keys_moving_between_partitions_that_encoded_alike(spark, warehouse, tmp_path):
    jobs = pipeline_on(spark, warehouse, "db.parts", SPEC)
    first = pd.DataFrame({"id": [1, 2, 3, 4, 5],
                          "p": ["a\x1fb", "a", None, "null", "x\x1e"],
                          "q": ["c", "b\x1fc", "z", "z", "_"], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    jobs.upsert(first, "one", tmp_path)
    # every key moves into the partition whose encoding used to equal its old one
    second = pd.DataFrame({"id": [1, 2, 3, 4], "p": ["a", "a\x1fb", "null", None], "q": ["b\x1fc", "c", "z", "z"],
                           "v": [10.0, 20.0, 30.0, 40.0]})
    _, written, _ = jobs.upsert(second, "two", tmp_path)
    assert written["moved_keys"] == 4
    assert_table_equals(get_table(jobs.options, "db.parts"), expected_upsert([first, second], "id"), "id")


def test_a_corrupt_manifest_is_rebuilt_by_the_bootstrap(spark, warehouse, tmp_path):
    jobs = pipeline_on(spark, warehouse, "db.parts", SPEC)
    first = pd.DataFrame({"id": [1, 2], "p": ["a", "b"], "q": ["c", "c"], "v": [1.0, 2.0]})
    jobs.upsert(first, "one", tmp_path)
    jobs.bootstrap()
    index_dir = layout.index_dir(layout.default_root(warehouse, "index"), "db.parts")
    manifests = glob.glob(os.path.join(index_dir, "*", "manifest.json"))
    assert manifests
    for m in manifests:
        with open(m, "w") as f:
            f.write('{"table": "db.parts", "shard')  # cut short
    boot = jobs.bootstrap()
    assert boot["index_decision"] == "rebuilt" and boot["keys"] == 2
    second = pd.DataFrame({"id": [1, 3], "p": ["b", "a"], "q": ["c", "c"], "v": [10.0, 3.0]})
    written = jobs.assign_and_write(boot, {"path": str(_parquet(second, tmp_path))}, "two")
    jobs.commit(written)
    assert written["moved_keys"] == 1
    assert_table_equals(get_table(jobs.options, "db.parts"), expected_upsert([first, second], "id"), "id")


def _parquet(df: pd.DataFrame, tmp_path):
    path = tmp_path / "second.parquet"
    df.to_parquet(path, index=False)
    return path
