"""The commit record (engine/commit/record.py): a DAG run's commit is found after its snapshot expired, so a
retry writes nothing again and a Clear is decided by ``reprocess_on_clear`` as documented — not written a second
time because the history forgot the first. In process (tests/local_runner.py), against the pandas oracle."""
from __future__ import annotations

import os
import shutil
import time

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.record import RecordedCommit, read_record
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.maintenance.orphans import remove_orphan_files
from airflow_paimon.engine.maintenance.rollback import rollback
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from file_age import age
from local_runner import bootstrap, in_process
from oracle import assert_table_equals, expected_upsert

COLUMNS = [("id", "BIGINT"), ("v", "DOUBLE")]
AGGREGATION = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
DAY1 = pd.DataFrame({"id": [1, 2], "v": [5.0, 5.0]})
DAY2 = pd.DataFrame({"id": [2, 3], "v": [1.0, 1.0]})
DAY3 = pd.DataFrame({"id": [3, 4], "v": [2.0, 2.0]})
TABLE = "db.t"


def _table(opts, options: dict | None = None):
    return get_or_create_table(opts, TABLE, TableSpec(COLUMNS, ["id"], [], {"bucket": "1", **(options or {})}))


def _write(boot, frame: pd.DataFrame, run_id: str, generation: int = 0, **write_args) -> dict:
    spec = boot.pipeline.spec("assign_and_write", {"bootstrap_index": boot.result.to_dict()}, run_id=run_id,
                              generation=generation, **write_args)
    return in_process("assign_and_write", spec, rows=pa.Table.from_pandas(frame, preserve_index=False)).to_dict()


def _commit(boot, written: dict) -> dict:
    return in_process("commit", boot.pipeline.spec("commit", {"assign_and_write": written})).to_dict()


def _run(opts, index_root, frame: pd.DataFrame, run_id: str, generation: int = 0, **write_args) -> dict:
    """One DAG run's bootstrap-index, assign-and-write and commit; the results by task."""
    boot = bootstrap(opts, TABLE, index_root, 2)
    written = _write(boot, frame, run_id, generation, **write_args)
    return {"boot": boot, "assign_and_write": written, "commit": _commit(boot, written)}


def _expire(opts) -> int:
    """Expire every snapshot but the latest, as PaimonExpireSnapshotsOperator with num-retained.min 1 does."""
    result = expire_snapshots(get_table(opts, TABLE), TableOptions.parse(TABLE, {"snapshot.num-retained.min": "1",
                                                                              "snapshot.time-retained": "0 ms"}).expire)
    assert result.expired_snapshots > 0
    return result.earliest_snapshot_id


def _three_days_then_expiry(opts, index_root, options: dict | None = None) -> dict:
    """Day 1, 2 and 3 committed, then every snapshot but day 3's expired; day 1's results."""
    _table(opts, options)
    day1 = _run(opts, index_root, DAY1, "day1")
    _run(opts, index_root, DAY2, "day2")
    _run(opts, index_root, DAY3, "day3")
    earliest = _expire(opts)
    assert earliest > day1["commit"]["snapshot_id"]
    assert get_table(opts, TABLE).snapshot_manager().get_snapshot_by_id(day1["commit"]["snapshot_id"]) is None
    return day1


def _sums(batches: list[pd.DataFrame]) -> pd.DataFrame:
    rows = pd.concat(batches, ignore_index=True)
    return rows.groupby("id", sort=True).agg(v=("v", "sum")).reset_index()[["id", "v"]]


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


def _record_path(opts, run_id: str, generation: int = 0) -> str:
    ident = CommitIdentity.for_run("test", run_id, TABLE, generation)
    return layout.commit_record_file(get_table(opts, TABLE).table_path, ident.commit_user, ident.commit_identifier)


def test_a_clear_after_expiry_of_an_aggregation_table_is_refused_with_upsert(opts, index_root, warehouse):
    day1 = _three_days_then_expiry(opts, index_root, AGGREGATION)
    latest = get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id
    boot = bootstrap(opts, TABLE, index_root, 2)
    before = _files(warehouse)
    with pytest.raises(ValidationError) as refused:
        _write(boot, DAY1, "day1", generation=1)  # the default reprocess_on_clear='upsert'
    assert f"snapshot {day1['commit']['snapshot_id']} (expired since; found by its commit record)" in str(refused.value)
    assert _files(warehouse) == before  # nothing staged
    assert get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id == latest
    assert_table_equals(get_table(opts, TABLE), _sums([DAY1, DAY2, DAY3]), "id")  # day 1 counted once: {1: 5, 2: 6}


def test_never_after_expiry_writes_nothing_and_reports_what_the_record_holds(opts, index_root):
    day1 = _three_days_then_expiry(opts, index_root, AGGREGATION)
    latest = get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id
    never = _run(opts, index_root, DAY1, "day1", generation=1, reprocess_on_clear="never")
    written, committed = never["assign_and_write"], never["commit"]
    assert written["already_committed"] and written["rows_written"] == 0 and written["generation"] == 1
    assert written["base_snapshot_id"] == day1["assign_and_write"]["base_snapshot_id"]
    assert committed["already_committed"] and committed["snapshot_id"] == day1["commit"]["snapshot_id"]
    for field in ("commit_kind", "delta_record_count", "files", "snapshot_fingerprint"):
        assert committed[field] == day1["commit"][field], field
    assert get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id == latest
    assert_table_equals(get_table(opts, TABLE), _sums([DAY1, DAY2, DAY3]), "id")


def test_upsert_after_expiry_still_writes_a_deduplicate_table_again(opts, index_root):
    day1 = _three_days_then_expiry(opts, index_root)
    fixed = pd.DataFrame({"id": [1, 2], "v": [7.0, 8.0]})  # the corrected day 1
    again = _run(opts, index_root, fixed, "day1", generation=1)
    assert again["assign_and_write"]["reprocessed_snapshot_id"] == day1["commit"]["snapshot_id"]
    assert not again["commit"]["already_committed"]
    assert_table_equals(get_table(opts, TABLE), expected_upsert([DAY1, DAY2, DAY3, fixed], "id"), "id")


def test_a_retry_after_expiry_of_the_runs_snapshot_writes_nothing_again(opts, index_root):
    day1 = _three_days_then_expiry(opts, index_root, AGGREGATION)
    latest = get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id
    boot = day1["boot"]  # the retried task reads the same bootstrap result (its base expired too)
    retried = _write(boot, DAY1, "day1")
    assert retried["already_committed"] and retried["rows_written"] == 0
    committed = _commit(boot, retried)
    assert committed["already_committed"] and committed["snapshot_id"] == day1["commit"]["snapshot_id"]
    assert committed["delta_record_count"] == day1["commit"]["delta_record_count"]
    assert get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id == latest
    assert_table_equals(get_table(opts, TABLE), _sums([DAY1, DAY2, DAY3]), "id")


def test_a_commit_retried_with_its_staging_still_there_after_expiry_commits_nothing_again(opts, index_root, tmp_path):
    _table(opts, AGGREGATION)
    boot = bootstrap(opts, TABLE, index_root, 2)
    written = _write(boot, DAY1, "day1")
    kept = tmp_path / "staged-copy"
    shutil.copytree(written["staging_uri"], kept)  # the commit crashed after its snapshot, before its clean-up
    first = _commit(boot, written)
    shutil.copytree(kept, written["staging_uri"])
    _run(opts, index_root, DAY2, "day2")
    _expire(opts)
    again = _commit(boot, written)
    assert again["already_committed"] and again["snapshot_id"] == first["snapshot_id"]
    assert not os.path.exists(written["staging_uri"])
    assert_table_equals(get_table(opts, TABLE), _sums([DAY1, DAY2]), "id")


def test_a_retry_that_finds_the_commit_records_it_again(opts, index_root):
    """A crash between the commit and its record: the retry finds the snapshot and writes the record."""
    _table(opts, AGGREGATION)
    day1 = _run(opts, index_root, DAY1, "day1")
    path = _record_path(opts, "day1")
    first = RecordedCommit.from_json(open(path, "rb").read())
    assert (first.id, first.dag_id, first.run_id, first.generation) == (day1["commit"]["snapshot_id"], "test",
                                                                        "day1", 0)
    assert os.path.getsize(path) < 600  # the size engine/commit/record.py states
    os.remove(path)
    assert _commit(day1["boot"], day1["assign_and_write"])["already_committed"]
    assert read_record(get_table(opts, TABLE), first.commit_user, first.commit_identifier).id == first.id


def test_expiry_and_orphan_removal_leave_the_records(opts, index_root, warehouse):
    _three_days_then_expiry(opts, index_root, AGGREGATION)
    table = get_table(opts, TABLE)
    records = {r: open(_record_path(opts, r), "rb").read() for r in ("day1", "day2", "day3")}
    age(table.table_path)  # past orphan removal's one-hour floor: every file gets judged
    staging_root = layout.default_root(warehouse, "staging")
    done = remove_orphan_files(table, int(time.time() * 1000) + 60_000, staging_root=staging_root)
    assert not any("airflow-paimon" in p for p in done.sample)
    assert {r: open(_record_path(opts, r), "rb").read() for r in records} == records
    _run(opts, index_root, DAY2, "day4")
    _expire(opts)
    assert {r: open(_record_path(opts, r), "rb").read() for r in records} == records


def test_a_rollback_drops_the_records_of_the_snapshots_it_removes(opts, index_root):
    _table(opts, AGGREGATION)
    day1 = _run(opts, index_root, DAY1, "day1")
    _run(opts, index_root, DAY2, "day2")
    rollback(opts, TABLE, index_root, to_snapshot=day1["commit"]["snapshot_id"])
    assert os.path.exists(_record_path(opts, "day1")) and not os.path.exists(_record_path(opts, "day2"))
    # day 2 runs again after the rollback: a fresh commit, recorded anew, found after its expiry
    _run(opts, index_root, DAY3, "day3")
    day2 = _run(opts, index_root, DAY2, "day2")
    assert not day2["commit"]["already_committed"]
    _run(opts, index_root, DAY3, "day3b")
    _expire(opts)
    retried = _write(day2["boot"], DAY2, "day2")  # a retry reads the same bootstrap result
    assert retried["already_committed"]
    assert _commit(day2["boot"], retried)["snapshot_id"] == day2["commit"]["snapshot_id"]
    assert_table_equals(get_table(opts, TABLE), _sums([DAY1, DAY3, DAY2, DAY3]), "id")


def _killed_before_its_record(opts, index_root, tmp_path, monkeypatch):
    """Day 1's commit lands its snapshot and is killed before its record (and before its clean-up); day 2 lands;
    every snapshot but day 2's expires. Day 1's bootstrap and assign-and-write results."""
    from airflow_paimon.engine.runs import commit as commit_job

    class Killed(Exception):
        pass

    def killed(*args, **kwargs):
        raise Killed()

    _table(opts, AGGREGATION)
    boot = bootstrap(opts, TABLE, index_root, 2)
    written = _write(boot, DAY1, "day1")
    with monkeypatch.context() as m:
        m.setattr(commit_job, "record_commit", killed)
        with pytest.raises(Killed):
            _commit(boot, written)
    assert not os.path.exists(_record_path(opts, "day1"))
    _run(opts, index_root, DAY2, "day2")
    _expire(opts)
    return boot, written


def test_a_commit_killed_between_its_snapshot_and_its_record_is_not_written_again_after_expiry(
        opts, index_root, tmp_path, monkeypatch):
    """The window the intent closes: the retry can find neither the snapshot (expired) nor the record (never
    written); its intent says the commit may have landed since the earliest kept snapshot: refused, not written
    again (before: written again, day 1 summed twice)."""
    from airflow_paimon.engine.errors import UnknownCommitError, heals_by_rewrite, is_retryable

    boot, written = _killed_before_its_record(opts, index_root, tmp_path, monkeypatch)
    latest = get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id
    with pytest.raises(UnknownCommitError) as refused:
        _commit(boot, written)
    assert not is_retryable(refused.value) and not heals_by_rewrite(refused.value)
    assert "whether it landed cannot be told, so it is not written again" in str(refused.value)
    assert get_table(opts, TABLE).snapshot_manager().get_latest_snapshot().id == latest  # nothing landed
    assert_table_equals(get_table(opts, TABLE), _sums([DAY1, DAY2]), "id")  # day 1 once


def test_an_intent_older_than_the_kept_history_is_a_commit_that_did_not_land(opts, index_root, tmp_path,
                                                                              monkeypatch):
    """An intent from before the earliest kept snapshot (less the clock skew): had the commit landed, its snapshot
    would be kept; it is not there, so the commit did not land and the run goes on as a run not committed."""
    from airflow_paimon.engine.commit.record import CLOCK_SKEW_MS, check_not_lost
    from airflow_paimon.engine.errors import UnknownCommitError

    _table(opts, AGGREGATION)
    _run(opts, index_root, DAY2, "day2")
    table = get_table(opts, TABLE)
    ident = CommitIdentity.for_run("test", "day1", TABLE)
    intent = layout.commit_intent_file(table.table_path, ident.commit_user, ident.commit_identifier)
    earliest = table.snapshot_manager().get_latest_snapshot()
    identities = [(ident.commit_user, ident.commit_identifier)]
    for at_ms, lost in ((earliest.time_millis + CLOCK_SKEW_MS + 1, False), (earliest.time_millis, True)):
        os.makedirs(os.path.dirname(intent), exist_ok=True)
        with open(intent, "w") as f:
            f.write(f'{{"at_ms": {at_ms}}}')
        if lost:
            with pytest.raises(UnknownCommitError):
                check_not_lost(table, identities, earliest.id)
        else:
            check_not_lost(table, identities, earliest.id)  # older than the kept history: it did not land


def test_a_record_replaces_its_intent(opts, index_root):
    _table(opts, AGGREGATION)
    _run(opts, index_root, DAY1, "day1")
    table = get_table(opts, TABLE)
    ident = CommitIdentity.for_run("test", "day1", TABLE)
    assert os.path.exists(_record_path(opts, "day1"))
    assert not os.path.exists(layout.commit_intent_file(table.table_path, ident.commit_user, ident.commit_identifier))
