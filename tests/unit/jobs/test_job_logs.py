"""Task logs a person reads: one progress line per job, made from the job's real result (engine/jobs/progress.py),
and the driver JVM's log4j2 configuration (spark/submit.py submit_conf). Through a real spark-submit:
tests/dag/test_task_log.py."""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.maintenance.orphans import remove_orphan_files
from airflow_paimon.spark.job_registry import progress_line
from airflow_paimon.engine.jobs.specs import CommitSpec
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.spark.submit import LOG4J2_CONFIG, SHORT_JOB_JAVA_OPTIONS, submit_conf
from compaction_tables import COLUMNS
from file_age import age
from local_runner import bootstrap, bootstrap_result, compact, write_run

def batch(ids, dts) -> pa.Table:
    spec = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"]})
    return pa.Table.from_pandas(pd.DataFrame({"id": pd.array(ids, "int64"), "dt": dts, "v": 1.5}),
                                schema=spec.arrow_schema(), preserve_index=False)


def test_progress_lines_of_real_results(warehouse):
    """Bootstrap, two upserts (the second with new keys, in-place updates and moves), commit and its retry,
    compaction, expiry and orphan removal of one cross-partition table, in-process; each line carries the
    result's counts with thousands separators, and the counters agree with a pandas oracle and Paimon."""
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", TableSpec.from_dict({
        "columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
        "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "500"}}))
    first = pd.DataFrame({"id": range(1500), "dt": [("a", "b", "c")[i % 3] for i in range(1500)]})
    # the second batch: ids 1000..2199 — 500 known (every 4th moves to another dt), 700 new
    second = pd.DataFrame({"id": range(1000, 2200)})
    second["dt"] = [("b", "c", "a")[i % 3] if i < 1500 and i % 4 == 0 else ("a", "b", "c")[i % 3]
                    for i in second["id"]]
    known = second[second["id"] < 1500].merge(first, on="id", suffixes=("", "_before"))
    moved, new = int((known["dt"] != known["dt_before"]).sum()), int((second["id"] >= 1500).sum())
    assert (moved, new) == (125, 700)

    boot = bootstrap_result(opts, "db.t", index_root, 2)
    assert progress_line("bootstrap_index", boot.to_dict(), 0.84) == (
        "bootstrap-index db.t: index rebuilt on the empty table (no published index), 0 keys in 2 shards, 0.8 s")
    written = write_run(bootstrap(opts, "db.t", index_root, 2), batch(first["id"], first["dt"]), run_id="r1")
    spec = CommitSpec.after(written, catalog_options=opts, table="db.t", staging_root=warehouse + "/staging")
    run_commit(spec)

    boot = bootstrap_result(opts, "db.t", index_root, 2)
    assert progress_line("bootstrap_index", boot.to_dict(), 12.04) == (
        "bootstrap-index db.t: index reused at snapshot 1 (index is of the latest snapshot), 1,500 keys in 2 "
        "shards, 12.0 s")
    written = write_run(bootstrap(opts, "db.t", index_root, 2), batch(second["id"], second["dt"]), run_id="r2")
    assert (written.rows_in, written.new_keys, written.moved_keys, written.deletes) == (1200, new, moved, moved)
    assert progress_line("assign_and_write", written.to_dict(), 6.78) == (
        f"assign-and-write db.t: 1,200 rows in, 700 new keys, 125 moved, 1,200 rows and 125 deletes written, "
        f"{written.files} files staged, 6.8 s")

    spec = CommitSpec.after(written, catalog_options=opts, table="db.t", staging_root=warehouse + "/staging")
    committed = run_commit(spec)
    # Paimon's own counters of snapshot 2: every record written (deletes included), every file staged
    assert (committed.snapshot_id, committed.commit_kind, committed.delta_record_count, committed.files) == (
        2, "APPEND", written.rows_written + written.deletes, written.files)
    assert progress_line("commit", committed.to_dict(), 3.25) == (
        f"commit db.t: snapshot 2 APPEND, 1,325 records, {written.files} files, 3.2 s")
    retried = run_commit(spec)  # the staging is gone: the result is read back from the snapshot
    assert retried.to_dict() == {**committed.to_dict(), "already_committed": True}
    assert progress_line("commit", retried.to_dict(), 3.0).endswith("files (committed by an earlier try), 3.0 s")

    table = get_table(opts, "db.t")
    result = {**compact(table, run_id="c", full=True, scope="table"), "table": "db.t"}
    assert result["compacted_buckets"] > 0 and result["files_after"] == result["compacted_buckets"]
    assert progress_line("compact", result, 9.0) == (
        f"compact db.t: snapshot 3 COMPACT, {result['compacted_buckets']} buckets, {result['files_before']} files "
        f"-> {result['files_after']}, 9.0 s")

    table = get_table(opts, "db.t")
    expired = expire_snapshots(table, TableOptions.parse("db.t", {"snapshot.num-retained.min": "1",
                                                                "snapshot.time-retained": "0 ms"}).expire)
    assert (expired.expired_snapshots, expired.earliest_snapshot_id) == (2, 3)
    assert progress_line("expire_snapshots", expired.to_dict(), 2.0) == (
        f"expire-snapshots db.t: expired 2 snapshots ({expired.deleted_data_files} data files, "
        f"{expired.deleted_metadata_files} metadata files), earliest snapshot 3, 2.0 s")

    orphan = Path(table.table_path) / "dt=a" / "bucket-0" / "data-never-committed-0.parquet"
    orphan.write_bytes(b"x" * 1234)
    age(str(orphan))
    found = remove_orphan_files(get_table(opts, "db.t"), int(time.time() * 1000) + 60_000, dry_run=True)
    assert progress_line("remove_orphan_files", found.to_dict(), 0.5) == (
        "remove-orphan-files db.t: found 1 orphan files (1,234 bytes), 0 stale staging dirs, 0.5 s")


def test_driver_gets_our_log4j2_configuration_merged_with_the_users_java_options():
    assert LOG4J2_CONFIG.is_file() and LOG4J2_CONFIG.parent.name == "spark"  # inside the package: in the wheel
    ours = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
    conf = submit_conf("/py")
    assert conf["spark.driver.extraJavaOptions"] == (
        f"{ours} -Dairflow_paimon.spark.log.level=WARN {SHORT_JOB_JAVA_OPTIONS}")
    # the user's options replace the short-job ones, ours stay in front (a -D of the user's comes later and wins)
    conf = submit_conf("/py", spark_conf={"spark.driver.extraJavaOptions": "-Xss4m -Dlog4j2.configurationFile=/x",
                                          "spark.log.level": "INFO"})
    assert conf["spark.driver.extraJavaOptions"] == (
        f"{ours} -Dairflow_paimon.spark.log.level=INFO -Xss4m -Dlog4j2.configurationFile=/x")
    assert conf["spark.log.level"] == "INFO" and conf["spark.pyspark.python"] == "/py"
