"""A run whose base index was cleaned up before its assign-and-write (project issue 54, item 3). The run's bootstrap
reused an index published long ago; two other runs committed and published since, and the clean-up after the second
removed that index (older than an hour, not among the newest two). Its assign-and-write bootstraps again, with the
bootstrap's own code, at the table's latest snapshot and writes against that: the run lands once, the table equals
the oracle with no key twice, and the index published for its snapshot equals a fresh rebuild. A retry of either
task converges."""
from __future__ import annotations

import os
import shutil
import time

import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.index.layout import published_snapshots, read_manifest
from airflow_paimon.engine.index.store import KEEP_SECONDS
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from faults.harness import index_content
from local_runner import bootstrap, in_process, upsert, write_run
from oracle import assert_table_equals, expected_upsert

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
FIRST = pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2, 3, 4]})
OTHERS = [pd.DataFrame({"id": [2, 5], "dt": list("bb"), "v": [20.0, 5]}),
          pd.DataFrame({"id": [3, 6], "dt": list("aa"), "v": [30.0, 6]})]
# the stale run moves keys the other runs moved or wrote (2, 3, 6) and one they did not (1): against its old base
# it would leave 2, 3 and 6 in two places
STALE = pd.DataFrame({"id": [1, 2, 3, 6, 7], "dt": list("bacba"), "v": [100.0, 200, 300, 600, 700]})


def arrow(df):
    return pa.Table.from_pandas(df, schema=SPEC.arrow_schema(), preserve_index=False)


def age(index_uri: str, snapshot_id: int, seconds: float) -> None:
    """Make the index of ``snapshot_id`` look published ``seconds`` ago (what the clean-up judges it by)."""
    manifest = layout.index_manifest(index_uri, snapshot_id)
    then = time.time() - seconds
    os.utime(manifest, (then, then))


def stale_run(opts, index_root):
    """The table after a first run (snapshot 1); a run bootstrapped there (reusing snapshot 1's index, published
    two hours ago); two other runs land (snapshots 2 and 3), whose clean-up removes snapshot 1's index."""
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(FIRST), run_id="r0")
    index_uri = layout.index_dir(index_root, "db.t")
    age(index_uri, 1, 2 * KEEP_SECONDS)  # published yesterday, say
    run = bootstrap(opts, "db.t", index_root, 2)
    assert run.base_snapshot_id == 1 and run.result.index_decision == "reused"
    for i, other in enumerate(OTHERS, 1):
        upsert(bootstrap(opts, "db.t", index_root, 2), arrow(other), run_id=f"other{i}")
    assert 1 not in published_snapshots(index_uri) and read_manifest(index_uri, 1) is None  # cleaned up
    return run, index_uri


def assert_landed(opts, index_uri, tmp_path, snapshot_id):
    """The table as the oracle has it (the stale run last), no key twice; the index of ``snapshot_id`` as a rebuild."""
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([FIRST, *OTHERS, STALE], "id"), "id")
    fresh = bootstrap(opts, "db.t", str(tmp_path / "fresh-index"), 2)
    assert fresh.result.index_decision == "rebuilt" and fresh.base_snapshot_id == snapshot_id
    assert index_content(index_uri, snapshot_id) == index_content(fresh.index_uri, snapshot_id)


def commit(run, written):
    return in_process("commit", run.pipeline.spec("commit", {"assign_and_write": written.to_dict()}))


def test_a_run_whose_base_index_was_cleaned_up_bootstraps_again_and_lands(opts, index_root, tmp_path):
    run, index_uri = stale_run(opts, index_root)
    written = write_run(run, arrow(STALE), run_id="stale")
    assert written.base_snapshot_id == 3 and not written.already_committed  # the latest snapshot, its index reused
    assert written.new_keys == 1 and written.moved_keys == 4
    committed = commit(run, written)
    assert committed.snapshot_id == 4 and committed.base_snapshot_id == 3 and not committed.rebased_over
    assert_landed(opts, index_uri, tmp_path, 4)


def test_every_task_of_the_healed_run_is_safe_to_retry(opts, index_root, tmp_path):
    run, index_uri = stale_run(opts, index_root)
    write_run(run, arrow(STALE), run_id="stale")
    written = write_run(run, arrow(STALE), run_id="stale")  # Airflow's retry: the same bootstrap result
    assert written.base_snapshot_id == 3
    assert commit(run, written).snapshot_id == 4
    assert commit(run, written).already_committed  # the commit's retry finds it
    again = write_run(run, arrow(STALE), run_id="stale")  # assign-and-write's retry after the commit
    assert again.already_committed and again.rows_written == 0
    assert get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id == 4
    assert_landed(opts, index_uri, tmp_path, 4)


def test_with_every_index_gone_the_run_rebuilds_at_the_latest_snapshot(opts, index_root, tmp_path):
    run, index_uri = stale_run(opts, index_root)
    shutil.rmtree(index_uri)  # the index directory lost altogether
    written = write_run(run, arrow(STALE), run_id="stale")
    assert written.base_snapshot_id == 3
    assert commit(run, written).snapshot_id == 4
    assert_landed(opts, index_uri, tmp_path, 4)
