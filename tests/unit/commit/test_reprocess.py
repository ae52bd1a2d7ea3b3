"""A DAG run cleared after its write committed (Airflow's Clear of a finished run): each clear is a generation of
the run with a commit identity of its own; ``reprocess_on_clear`` decides whether the source is written again.
In process (the engine's orchestration, tests/local_runner.py), read back with pypaimon, against the pandas
oracle."""
from __future__ import annotations

import hashlib
import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.runs.compact import compaction_identity
from airflow_paimon.engine.errors import ValidationError, is_retryable
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.jobs.specs import BootstrapResult
from local_runner import Bootstrapped, bootstrap, in_process
from oracle import assert_table_equals, expected_upsert, read_table

COLUMNS = [("id", "BIGINT"), ("dt", "STRING"), ("v", "DOUBLE")]
CROSS = {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}  # cross-partition: key id, partition dt
SEED = pd.DataFrame({"id": [1, 2, 3, 4], "dt": ["d1", "d1", "d2", "d2"], "v": [1.0, 2.0, 3.0, 4.0]})
DAY = pd.DataFrame({"id": [2, 3, 5], "dt": ["d1", "d2", "d3"], "v": [20.0, 30.0, 50.0]})
FIXED = pd.DataFrame({"id": [2, 3, 6], "dt": ["d2", "d2", "d3"], "v": [21.0, 31.0, 60.0]})  # key 2 moves


def _identity_before_generations(dag_id: str, run_id: str, table: str) -> CommitIdentity:
    """The identity as it was computed before generations existed (commit 40eff8c), spelled out here."""
    digest = hashlib.sha256("\0".join((dag_id, run_id, table)).encode()).digest()
    return CommitIdentity(f"airflow-paimon-{digest[8:24].hex()}",
                          int.from_bytes(digest[:8], "big") & 0x3FFF_FFFF_FFFF_FFFF)


def test_generation_0_keeps_the_identity_of_existing_tables_and_a_clear_gets_its_own():
    before = _identity_before_generations("dag", "manual__1", "db.t")
    assert CommitIdentity.for_run("dag", "manual__1", "db.t") == before
    assert CommitIdentity.for_run("dag", "manual__1", "db.t", generation=0) == before
    cleared = [CommitIdentity.for_run("dag", "manual__1", "db.t", generation=g) for g in (1, 2, 3)]
    assert len({before, *cleared}) == 4
    assert len({i.commit_user for i in [before, *cleared]}) == 4 and len({i.commit_identifier for i in cleared}) == 3
    assert all(0 < i.commit_identifier < 2 ** 63 - 1 for i in cleared)  # a Java long, never Long.MAX_VALUE
    assert compaction_identity("dag", "manual__1", "db.t") == _identity_before_generations("dag", "manual__1",
                                                                                          "db.t:compact")
    assert compaction_identity("dag", "manual__1", "db.t", 0) == compaction_identity("dag", "manual__1", "db.t")
    assert compaction_identity("dag", "manual__1", "db.t", 1) not in (
        compaction_identity("dag", "manual__1", "db.t"), CommitIdentity.for_run("dag", "manual__1", "db.t", 1))


def _table(opts, options: dict | None = None):
    return get_or_create_table(opts, "db.t", TableSpec(COLUMNS, ["id"], ["dt"], {**CROSS, **(options or {})}))


def _run(opts, index_root, frame: pd.DataFrame, run_id: str, generation: int = 0, **write_args) -> dict:
    """One DAG run's bootstrap-index, assign-and-write and commit (generation: the run's clear_number); the
    results by task."""
    boot = bootstrap(opts, "db.t", index_root, 2)
    written = _write(boot, frame, run_id, generation, **write_args)
    committed = in_process("commit", boot.pipeline.spec("commit", {"assign_and_write": written}))
    return {"bootstrap_index": boot.result.to_dict(), "assign_and_write": written, "commit": committed.to_dict()}


def _write(boot, frame: pd.DataFrame, run_id: str, generation: int = 0, **write_args) -> dict:
    spec = boot.pipeline.spec("assign_and_write", {"bootstrap_index": boot.result.to_dict()}, run_id=run_id,
                              generation=generation, **write_args)
    return in_process("assign_and_write", spec, rows=pa.Table.from_pandas(frame, preserve_index=False)).to_dict()


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


def test_a_cleared_run_writes_its_corrected_source_again_and_it_replaces_the_first(opts, index_root):
    _table(opts)
    _run(opts, index_root, SEED, "seed")
    first = _run(opts, index_root, DAY, "day")
    assert first["assign_and_write"]["generation"] == 0 and first["assign_and_write"]["reprocessed_snapshot_id"] is None
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([SEED, DAY], "id"), "id")

    again = _run(opts, index_root, FIXED, "day", generation=1)
    written = again["assign_and_write"]
    assert written["generation"] == 1 and written["reprocessed_snapshot_id"] == first["commit"]["snapshot_id"]
    assert written["commit_user"] != first["assign_and_write"]["commit_user"] and written["rows_written"] > 0
    assert again["commit"]["snapshot_id"] == first["commit"]["snapshot_id"] + 1
    assert not again["commit"]["already_committed"]
    # the corrected batch replaces the first: key 5 stays (an upsert removes no key), key 2 moved to d2, once
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([SEED, DAY, FIXED], "id"), "id")

    # a retry of the same generation (the same bootstrap result) after its commit writes nothing: exactly once
    latest = get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id
    boot = bootstrap(opts, "db.t", index_root, 2)
    boot = Bootstrapped(boot.pipeline, BootstrapResult.from_dict(again["bootstrap_index"]))
    retried = _write(boot, FIXED, "day", generation=1)
    assert retried["already_committed"] and retried["rows_written"] == 0
    committed = in_process("commit", boot.pipeline.spec("commit", {"assign_and_write": retried}))
    assert committed.already_committed and committed.snapshot_id == latest
    assert get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id == latest
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([SEED, DAY, FIXED], "id"), "id")


AGGREGATION = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}


def _sums(batches: list[pd.DataFrame]) -> pd.DataFrame:
    """The aggregation oracle: per key the sum of v over every batch, in the partition of its first row (a known
    key's record merges in its old place, Paimon's cross-partition USE_OLD)."""
    rows = pd.concat(batches, ignore_index=True)
    out = rows.groupby("id", sort=True).agg(dt=("dt", "first"), v=("v", "sum")).reset_index()
    return out[["id", "dt", "v"]]


@pytest.mark.parametrize("options", [AGGREGATION, {"merge-engine": "partial-update"},
                                     {"merge-engine": "first-row"}], ids=["aggregation", "partial-update", "first-row"])
def test_a_cleared_run_into_a_table_of_another_merge_engine_is_refused_before_anything_is_staged(
        opts, index_root, warehouse, options):
    _table(opts, options)
    _run(opts, index_root, SEED, "seed")
    first = _run(opts, index_root, DAY, "day")
    before_rows = read_table(get_table(opts, "db.t")).sort_values("id").reset_index(drop=True)
    boot = bootstrap(opts, "db.t", index_root, 2)
    before_files = _files(warehouse)
    with pytest.raises(ValidationError) as refused:
        _write(boot, DAY, "day", generation=1)
    message = str(refused.value)
    assert f"option 'merge-engine', value '{options['merge-engine']}'" in message and "table db.t" in message
    assert "reprocess_on_clear" in message and f"snapshot {first['commit']['snapshot_id']}" in message
    assert "clear 1" in message and not is_retryable(refused.value)
    assert _files(warehouse) == before_files  # nothing staged, no data file written
    after = get_table(opts, "db.t")
    assert after.snapshot_manager().get_latest_snapshot().id == first["commit"]["snapshot_id"]
    pd.testing.assert_frame_equal(read_table(after).sort_values("id").reset_index(drop=True), before_rows)


def test_always_writes_a_cleared_run_again_into_an_aggregation_table_and_never_writes_nothing(opts, index_root):
    _table(opts, AGGREGATION)
    _run(opts, index_root, SEED, "seed")
    first = _run(opts, index_root, DAY, "day")
    assert_table_equals(get_table(opts, "db.t"), _sums([SEED, DAY]), "id")

    never = _run(opts, index_root, DAY, "day", generation=1, reprocess_on_clear="never")
    assert never["assign_and_write"]["already_committed"] and never["assign_and_write"]["rows_written"] == 0
    assert never["assign_and_write"]["generation"] == 1 and never["assign_and_write"]["reprocessed_snapshot_id"] is None
    assert never["commit"]["already_committed"] and never["commit"]["snapshot_id"] == first["commit"]["snapshot_id"]
    assert get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id == first["commit"]["snapshot_id"]
    assert_table_equals(get_table(opts, "db.t"), _sums([SEED, DAY]), "id")

    # as the user asked: the day's contribution counts twice
    always = _run(opts, index_root, DAY, "day", generation=2, reprocess_on_clear="always")
    assert always["assign_and_write"]["reprocessed_snapshot_id"] == first["commit"]["snapshot_id"]
    assert always["commit"]["snapshot_id"] == first["commit"]["snapshot_id"] + 1
    assert_table_equals(get_table(opts, "db.t"), _sums([SEED, DAY, DAY]), "id")


def test_never_keeps_the_earlier_write_of_a_deduplicate_table(opts, index_root):
    _table(opts)
    first = _run(opts, index_root, DAY, "day")
    kept = _run(opts, index_root, FIXED, "day", generation=1, reprocess_on_clear="never")
    assert kept["commit"]["snapshot_id"] == first["commit"]["snapshot_id"] and kept["commit"]["already_committed"]
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([DAY], "id"), "id")


def test_a_cleared_run_that_never_committed_writes_as_a_fresh_run(opts, index_root):
    _table(opts, AGGREGATION)
    boot = bootstrap(opts, "db.t", index_root, 2)
    _write(boot, DAY, "day")  # staged, never committed (the commit task failed; the run was cleared)
    again = _run(opts, index_root, DAY, "day", generation=1)
    assert again["assign_and_write"]["reprocessed_snapshot_id"] is None and not again["commit"]["already_committed"]
    assert_table_equals(get_table(opts, "db.t"), _sums([DAY]), "id")


def test_a_clear_that_skips_bootstrap_index_is_refused_before_staging(opts, index_root, warehouse):
    """Clear of assign-and-write and commit only: the bootstrap result predates the earlier commit, the index is
    stale; refused (not retryable) before anything is written, naming the way out."""
    from airflow_paimon.engine.errors import StaleIndexError

    _table(opts)
    boot = bootstrap(opts, "db.t", index_root, 2)
    written = _write(boot, DAY, "day")
    in_process("commit", boot.pipeline.spec("commit", {"assign_and_write": written}))
    before = _files(warehouse)
    with pytest.raises(StaleIndexError, match="clear the run from bootstrap-index"):
        _write(boot, FIXED, "day", generation=1)
    assert _files(warehouse) == before
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([DAY], "id"), "id")


def test_the_ui_labels_what_a_cleared_run_wrote():
    """The Paimon page recomputes the identities of generations 0..clear_number of each recent run."""
    from airflow_paimon.ui.runs import run_label, runs_by_commit_user

    found = runs_by_commit_user("db.t", [("dag", "day", 2), ("dag", "old", None), ("dag", "two")])
    for generation in (0, 1, 2):
        write = CommitIdentity.for_run("dag", "day", "db.t", generation).commit_user
        assert found[write] == ("dag", "day", generation)
        assert found[compaction_identity("dag", "day", "db.t", generation).commit_user] == ("dag", "day", generation)
    assert CommitIdentity.for_run("dag", "day", "db.t", 3).commit_user not in found
    assert found[CommitIdentity.for_run("dag", "two", "db.t").commit_user] == ("dag", "two", 0)
    assert len(found) == 2 * 3 + 2 + 2
    assert run_label(("dag", "day", 1)) == "dag / day (clear 1)"
    assert run_label(("dag", "day", 0)) == run_label(("dag", "day")) == "dag / day"


def test_reprocess_on_clear_is_checked_when_the_dag_is_parsed():
    from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator
    from airflow_paimon.task_group import paimon_upsert
    from airflow.sdk import DAG

    with DAG("parse_reprocess", schedule=None):
        for value in ("upsert", "always", "never"):
            op = PaimonAssignAndWriteOperator(task_id=f"w_{value}", table="db.t", source="/in",
                                              reprocess_on_clear=value)
            assert op.reprocess_on_clear == value
        with pytest.raises(ValueError, match=r"reprocess_on_clear must be one of \['upsert', 'always', 'never'\]"):
            PaimonAssignAndWriteOperator(task_id="w_bad", table="db.t", source="/in", reprocess_on_clear="twice")
        group = paimon_upsert(table="db.t", source="/in", reprocess_on_clear="never")
        assert group.children["db_t.assign_and_write"].reprocess_on_clear == "never"
