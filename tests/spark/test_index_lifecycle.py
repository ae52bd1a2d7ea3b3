"""The persistent global index: reuse, catch up after other writers, rebuild on damage, TTL, publish on retry."""
from __future__ import annotations

import os
import time

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.table.table import TableSpec, get_table
from compaction_tables import assert_reads
from oracle import assert_table_equals, expected_upsert, read_table
from spark.jobs import pipeline_on

pytestmark = pytest.mark.spark

SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                              "write.native.enabled": "true"}}


def frame(ids, dts, vs):
    return pd.DataFrame({"id": pd.array(ids, "int64"), "dt": list(dts), "v": [float(v) for v in vs]})


def native_write(warehouse, df):
    table = get_table({"warehouse": warehouse}, "db.t")
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(df, schema=TableSpec.from_dict(SPEC).arrow_schema(), preserve_index=False))
    builder.new_commit().commit(write.prepare_commit())
    write.close()


def test_reuse_catch_up_and_rebuild(spark, warehouse, tmp_path):
    jobs = pipeline_on(spark, warehouse, "db.t", SPEC)
    batches = [frame([1, 2, 3, 4], "aabb", [1, 2, 3, 4])]
    boot, written, committed = jobs.upsert(batches[0], "r1", tmp_path)
    assert boot["index_decision"] == "rebuilt" and boot["keys"] == 0
    assert committed["snapshot_id"] == 1 and read_manifest(boot["index_uri"], 1).origin == "committed"

    again = jobs.bootstrap()  # our own commit published the index of snapshot 1
    assert (again["index_decision"], again["data_files_read"], again["keys"]) == ("reused", 0, 4)

    batches.append(frame([1, 5, 3], "cca", [10, 50, 30]))  # pypaimon-rust moves 1 and 3, adds 5
    native_write(warehouse, batches[-1])
    caught = jobs.bootstrap()
    table = get_table({"warehouse": warehouse}, "db.t")
    added = table.snapshot_manager().get_latest_snapshot().delta_record_count
    assert caught["index_decision"] == "caught_up" and caught["base_snapshot_id"] == 2 and caught["keys"] == 5
    assert 0 < caught["data_files_read"] <= added
    batches.append(frame([1, 3, 6], "abc", [100, 300, 600]))  # ours again: must know where 1 and 3 live now
    _, written, _ = jobs.upsert(batches[-1], "r3", tmp_path)
    assert written["moved_keys"] == 2
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert(batches, "id"), "id")

    manifest = read_manifest(caught["index_uri"], 3)
    victim = os.path.join(caught["index_uri"], manifest.files()[0].path)
    with open(victim, "r+b") as f:
        f.seek(10)
        f.write(b"garbage")
    rebuilt = jobs.bootstrap()
    assert rebuilt["index_decision"] == "rebuilt" and "corrupt" in rebuilt["reason"] and rebuilt["keys"] == 6
    batches.append(frame([2, 6], "cc", [20, 60]))
    jobs.upsert(batches[-1], "r4", tmp_path)
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert(batches, "id"), "id")


def test_retried_commit_still_publishes_the_index(spark, warehouse, tmp_path, monkeypatch):
    import airflow_paimon.engine.runs.commit as commit_job

    jobs = pipeline_on(spark, warehouse, "db.t", SPEC)
    path = tmp_path / "r1.parquet"
    frame([1, 2], "ab", [1, 2]).to_parquet(path, index=False)
    boot = jobs.bootstrap()
    written = jobs.assign_and_write(boot, {"path": str(path)}, "r1")

    def die(*args):
        raise RuntimeError("worker lost between commit and publish")

    with monkeypatch.context() as m:
        m.setattr(commit_job, "publish_index", die)
        with pytest.raises(RuntimeError):
            jobs.commit(written)
    assert read_manifest(boot["index_uri"], 1) is None
    retry = jobs.commit(written)
    assert retry["snapshot_id"] == 1 and retry["already_committed"] is True
    assert read_manifest(boot["index_uri"], 1) is not None and jobs.bootstrap()["index_decision"] == "reused"
    assert not os.path.exists(written["staging_uri"])  # published, so the staging is gone
    assert jobs.commit(written) == retry  # and yet another retry still answers from the snapshot


def test_index_ttl_forgets_keys_with_paimons_duplicate_risk(spark, warehouse, tmp_path):
    spec = {**SPEC, "options": {**SPEC["options"], "cross-partition-upsert.index-ttl": "15 s"}}
    jobs = pipeline_on(spark, warehouse, "db.t", spec)
    jobs.upsert(frame([1, 2], "ab", [1, 2]), "r1", tmp_path)
    _, written, _ = jobs.upsert(frame([1], "b", [10]), "r2", tmp_path)  # within the TTL: a proper move
    assert written["moved_keys"] == 1
    time.sleep(16)
    _, written, _ = jobs.upsert(frame([2], "a", [20]), "r3", tmp_path)  # after it: key 2 is unknown
    assert written["moved_keys"] == 0
    data = read_table(get_table({"warehouse": warehouse}, "db.t"))
    # Paimon documents exactly this: an expired key that changes partition is duplicated.
    assert sorted(data[data["id"] == 2]["dt"]) == ["a", "b"]
    assert data[data["id"] == 1]["dt"].tolist() == ["b"]


def test_buckets_another_writer_laid_out_get_one_file_per_run(spark, warehouse, tmp_path):
    """pypaimon-rust placed the keys, so a bucket holds keys of every shard (IndexManifest.shares_buckets): the
    assigned rows go to one writer per bucket, as Paimon's, rather than a file from each shard's task. Reads
    and a full compaction see every key once."""
    from airflow_paimon.engine.files.scan import added_entries
    from airflow_paimon.engine.jobs.specs import CompactSpec
    from airflow_paimon.spark.compact import run_compact

    spec = {**SPEC, "options": {**SPEC["options"], "dynamic-bucket.target-row-num": "100"}}
    jobs = pipeline_on(spark, warehouse, "db.t", spec, shards=4)
    jobs.bootstrap()  # creates the table
    start = frame(range(40), ["a", "b"] * 20, range(40))
    native_write(warehouse, start)
    update = frame(range(0, 40, 2), ["a", "b"] * 10, [v * 10 for v in range(0, 40, 2)])  # same partitions
    _, _, committed = jobs.upsert(update, "r1", tmp_path)
    table = get_table({"warehouse": warehouse}, "db.t")
    added = added_entries(table, table.snapshot_manager().get_snapshot_by_id(committed["snapshot_id"]))
    files_per_bucket = pd.Series([(tuple(e.partition.values), e.bucket) for e in added]).value_counts()
    assert files_per_bucket.max() == 1, files_per_bucket
    expected = expected_upsert([start, update], "id")
    assert_reads(table, warehouse, expected, ["id"])  # pypaimon and pypaimon-rust
    compacted = run_compact(spark, CompactSpec(catalog_options={"warehouse": warehouse}, table="db.t",
                                               dag_id="tests", run_id="c1", snapshot_id=committed["snapshot_id"],
                                               full=True))
    assert compacted.compacted_buckets > 0
    assert_reads(get_table({"warehouse": warehouse}, "db.t"), warehouse, expected, ["id"])


def test_a_run_whose_base_index_was_cleaned_up_catches_up_in_its_spark_job(spark, warehouse, tmp_path):
    """The run's bootstrap reused snapshot 1's index, published long ago; two runs of ours land and clean it up,
    another writer appends: the run's assign-and-write bootstraps again on Spark (a catch-up) and lands once."""
    jobs = pipeline_on(spark, warehouse, "db.t", SPEC)
    batches = [frame([1, 2, 3, 4], "aabb", [1, 2, 3, 4])]
    boot, _, _ = jobs.upsert(batches[0], "r1", tmp_path)
    long_ago = time.time() - 2 * 3600
    os.utime(os.path.join(boot["index_uri"], "snapshot-1", "manifest.json"), (long_ago, long_ago))
    stale = jobs.bootstrap()
    assert (stale["base_snapshot_id"], stale["index_decision"]) == (1, "reused")
    for run_id, batch in (("r2", frame([2, 5], "bb", [20, 5])), ("r3", frame([3, 6], "aa", [30, 6]))):
        jobs.upsert(batch, run_id, tmp_path)
        batches.append(batch)
    assert read_manifest(stale["index_uri"], 1) is None  # cleaned up
    batches.append(frame([4, 7], "ca", [40, 7]))  # another writer: snapshot 4 has no index of ours
    native_write(warehouse, batches[-1])
    batches.append(frame([1, 2, 4, 7], "bacb", [100, 200, 400, 700]))
    path = tmp_path / "stale.parquet"
    batches[-1].to_parquet(path, index=False)
    written = jobs.assign_and_write(stale, {"path": str(path)}, "stale")
    assert written["base_snapshot_id"] == 4 and written["moved_keys"] == 3  # 1, 2 and 7 (4 is in c already)
    committed = jobs.commit(written)
    assert committed["snapshot_id"] == 5 and not committed["rebased_over"]
    assert read_manifest(stale["index_uri"], 4).origin == "caught_up"
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert(batches, "id"), "id")
