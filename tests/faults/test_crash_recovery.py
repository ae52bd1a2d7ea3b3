"""kill -9 of each job of a DAG run at named points, then the retry Airflow would make (the same job, the
same spec): the run converges — every row of the oracle, no key twice, the run's data in exactly one
snapshot, nothing half-committed visible in between, and the index equal to a full rebuild of the table."""
from __future__ import annotations

import logging
import shutil

import numpy as np
import pandas as pd
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.index.bootstrap import CATCH_UP, REBUILD, REUSE
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.runs.compact import compaction_identity
from airflow_paimon.engine.files.layout import index_snapshot_dir
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.table.table import get_table
from compaction_tables import assert_reads
from faults.batches import ROW_KIND, random_batch
from faults.harness import JOBS, assert_index_consistent, attempt, fault_pipeline
from local_runner import Pipeline
from oracle import expected_upsert, read_table

pytestmark = [pytest.mark.faults, pytest.mark.spark]
SEED = 11
log = logging.getLogger(__name__)
EXECUTOR_POINTS = {"bootstrap.shard_file_published", "assign_write.task_written", "compact.bucket_rewritten"}
CASES = [  # (job, crash point, how the bootstrap finds the index)
    ("bootstrap_index", "bootstrap.shard_file_published", "rebuild"),
    ("bootstrap_index", "bootstrap.before_manifest", "rebuild"),
    ("bootstrap_index", "bootstrap.after_manifest", "rebuild"),
    ("bootstrap_index", "bootstrap.before_manifest", "catch_up"),
    ("assign_and_write", "assign_write.task_written", "reuse"),
    ("assign_and_write", "assign_write.before_stage", "reuse"),
    ("assign_and_write", "assign_write.after_stage", "reuse"),
    ("commit", "commit.before_commit", "reuse"),
    ("commit", "commit.before_publish", "reuse"),
    ("commit", "commit.before_clean_up", "reuse"),
    ("compact", "compact.bucket_rewritten", "reuse"),
    ("compact", "compact.before_commit", "reuse"),
    ("compact", "compact.after_commit", "reuse"),
]


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory):
    """A table after one DAG run (300 rows in 4 partitions), and the next three batches as parquet files."""
    root = tmp_path_factory.mktemp("faults-base")
    rng, live, next_id, batches = np.random.default_rng(SEED), pd.DataFrame(columns=["id", "dt", "v"]), 0, []
    for i in range(4):
        batch, next_id = random_batch(rng, live, next_id, 300 if i == 0 else 120)
        batch.to_parquet(root / f"batch-{i}.parquet", index=False)
        batches.append(batch)
        live = expected_upsert(batches, "id", row_kind=ROW_KIND)
    fault_pipeline(spark, str(root / "warehouse")).dag_run(str(root / "batch-0.parquet"), "run-0")
    return root, batches


def crashed(a, point: str) -> None:
    """The attempt died at ``point``: SIGKILL of the driver, or of the Python worker (then Spark fails the
    job: local[1] retries no task)."""
    if point in EXECUTOR_POINTS:
        assert a.returncode != 0 and a.result is None, a.log[-3000:]
        assert "Python worker exited unexpectedly (crashed)" in a.log, a.log[-3000:]
    else:
        assert a.killed and a.result is None, (a.returncode, a.log[-3000:])


def assert_whole_snapshot(p: Pipeline, before_id: int, expected_before: pd.DataFrame,
                          expected_after: pd.DataFrame) -> None:
    """After a crash the table is at the run's base or one snapshot further, and reads as either state in
    full: nothing in between is ever visible."""
    snapshot = latest_snapshot(get_table(p.options, p.table))
    assert snapshot.id in (before_id, before_id + 1)
    actual = read_table(get_table(p.options, p.table))
    assert not actual["id"].duplicated().any()
    actual = actual[["id", "dt", "v"]].sort_values("id").reset_index(drop=True)
    states = [e.reset_index(drop=True) for e in (expected_before, expected_after)]
    assert any(actual.shape == e.shape and actual.equals(e[actual.columns].astype(actual.dtypes)) for e in states)


@pytest.mark.parametrize(("job", "point", "index"), CASES, ids=[f"{p}-{i}" for _, p, i in CASES])
def test_kill_then_retry_converges(spark, base, tmp_path, job, point, index):
    root, batches = base
    warehouse = tmp_path / "warehouse"
    shutil.copytree(root / "warehouse", warehouse)
    p = fault_pipeline(spark, str(warehouse))
    index_uri = layout.index_dir(p.index_root, p.table)
    done = batches[:1]
    if index == "rebuild":  # no index yet: the bootstrap rebuilds it from the table
        shutil.rmtree(index_uri)
    elif index == "catch_up":  # a run committed, its index never published: the bootstrap catches up
        committed = p.dag_run(str(root / "batch-1.parquet"), "run-1", jobs=JOBS[:3])["commit"]
        shutil.rmtree(f"{index_uri}/{index_snapshot_dir(committed['snapshot_id'])}")
        done = batches[:2]
    n = len(done)
    before_id = latest_snapshot(get_table(p.options, p.table)).id
    expected_before = expected_upsert(done, "id", row_kind=ROW_KIND)
    expected_after = expected_upsert(batches[:n + 1], "id", row_kind=ROW_KIND)

    results, run_id, source = {}, f"run-{n}", str(root / f"batch-{n}.parquet")
    steps = JOBS if job == "compact" else JOBS[:3]
    for step in steps:
        spec = p.spec(step, results, source, run_id)
        if step == job:
            crashed(attempt(step, spec, tmp_path / "attempt", crash_at=point), point)
            assert_whole_snapshot(p, before_id + (step == "compact"), expected_after if step == "compact"
                                  else expected_before, expected_after)
        results[step] = p.run(step, spec)  # the retry (or the one attempt of the steps that do not crash)

    # the bootstrap's retry redoes what it must: an index published before the kill is taken as it is
    expected_decision = REUSE if point == "bootstrap.after_manifest" else {"rebuild": REBUILD, "catch_up": CATCH_UP,
                                                                        "reuse": REUSE}[index]
    assert results["bootstrap_index"]["index_decision"] == expected_decision
    # the run's data landed once, as the snapshot right after its base (and its compaction once, after it)
    assert results["commit"]["snapshot_id"] == before_id + 1
    table = get_table(p.options, p.table)
    assert [s.id for s in snapshots_of(table, "faults", run_id)] == [before_id + 1]
    if job == "compact":
        compacted = snapshots_of(table, "faults", run_id, compaction=True)
        assert [s.id for s in compacted] == [results["compact"]["snapshot_id"]] == [before_id + 2]
        assert compacted[0].commit_kind == "COMPACT" and results["compact"]["compacted_buckets"] > 0
    assert latest_snapshot(table).id == before_id + len(steps) - 2
    assert_reads(table, str(warehouse), expected_after, ["id"])
    assert assert_index_consistent(p, tmp_path) == len(expected_after)
    log.warning("fault %s (%s): killed, retried; %s rows compared twice, %s index keys equal a rebuild", point,
                index, len(expected_after), len(expected_after))


def snapshots_of(table, dag_id: str, run_id: str, compaction: bool = False) -> list:
    identity = (compaction_identity if compaction else CommitIdentity.for_run)(dag_id, run_id, "db.t")
    return [s for s in table.snapshot_manager().list_snapshots() if s.commit_user == identity.commit_user]


def test_commit_of_one_run_ten_times_makes_one_snapshot(spark, base, tmp_path):
    """Airflow may run the commit task of a run any number of times (retries, clears): one snapshot, and every
    run of the task reports it; an assign-and-write retried after the commit writes nothing again."""
    root, batches = base
    shutil.copytree(root / "warehouse", tmp_path / "warehouse")
    p = fault_pipeline(spark, str(tmp_path / "warehouse"))
    done = p.dag_run(str(root / "batch-1.parquet"), "run-1", jobs=JOBS[:2])
    spec = p.spec("commit", done, "", "run-1")
    results = [p.run("commit", spec) for _ in range(10)]
    assert results[0]["already_committed"] is False and all(r["already_committed"] for r in results[1:])
    assert {r["snapshot_id"] for r in results} == {3}
    rewritten = p.run("assign_and_write", p.spec("assign_and_write", done, str(root / "batch-1.parquet"), "run-1"))
    assert rewritten["already_committed"] is True and rewritten["files"] == 0
    assert p.run("commit", spec)["snapshot_id"] == 3
    table = get_table(p.options, p.table)
    assert [s.id for s in snapshots_of(table, "faults", "run-1")] == [3] and latest_snapshot(table).id == 3
    assert_reads(table, p.warehouse, expected_upsert(batches[:2], "id", row_kind=ROW_KIND), ["id"])
