"""Commits that know the table's history (engine/snapshot/history.py): a run's base is a snapshot, not an id. Each test
rolls a real table back (engine/maintenance/rollback.py) between a run's steps, lets later commits reuse the rolled-back
ids where it matters, and reads the table back with pypaimon against a pandas oracle, no key twice."""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.jobs.specs import CommitSpec
from airflow_paimon.engine.compact.commit import CompactConflictError
from airflow_paimon.engine.errors import (MissingFileError, PaimonJobError, RolledBackError, TableChangedError,
                                         ValidationError)
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.table.lifecycle import create_table
from airflow_paimon.engine.maintenance.rollback import rollback
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from deletion_vector_tables import CROSS as DV_CROSS
from local_runner import bootstrap, compact, stage_run, upsert, write_run
from lifecycle_tables import AFTER, RUNS, SCHEMA, SPEC, arrow, write
from oracle import assert_table_equals, expected_upsert

# the stale run: staged at snapshot 3, it moves key 1 back to partition a
STALE = pd.DataFrame({"id": [1, 9], "dt": list("aa"), "v": [111.0, 9]})


def latest_id(opts) -> int:
    return get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().id


@pytest.mark.parametrize("reuse_ids", [False, True], ids=["below-the-base", "ids-reused"])
def test_a_write_staged_before_a_rollback_is_refused_and_its_rerun_converges(opts, index_root, reuse_ids):
    """The stale run bootstraps and stages at snapshot 3; the table is rolled back to 1 (and, ids-reused, written
    to twice, so snapshot 3 exists again but is another snapshot). Its commit is refused, nothing lands; its re-run
    from bootstrap-index lands once."""
    create_table(opts, "db.t", SPEC)
    assert write(opts, index_root, RUNS) == [1, 2, 3]
    stale = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(STALE), run_id="stale")
    assert stale.base_snapshot_id == 3 and stale.base_snapshot_fingerprint
    rollback(opts, "db.t", index_root, to_snapshot=1)
    after = AFTER if reuse_ids else []
    assert write(opts, index_root, after, first=3) == [2, 3][:len(after)]
    expected = expected_upsert([RUNS[0], *after], "id")
    with pytest.raises(RolledBackError, match=r"table db\.t: .*snapshot 3.*rolled back.*nothing committed"):
        run_commit(stale)
    assert latest_id(opts) == (3 if reuse_ids else 1)
    assert_table_equals(get_table(opts, "db.t"), expected, "id")
    # the re-run of the whole DAG run: its identity, a new bootstrap
    snapshot_id, already = upsert(bootstrap(opts, "db.t", index_root, 2), arrow(STALE), run_id="stale")
    assert (snapshot_id, already) == ((4 if reuse_ids else 2), False)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([RUNS[0], *after, STALE], "id"), "id")


@pytest.mark.parametrize("options", [{}, {"bucket": "2"}], ids=["cross-partition", "fixed-bucket"])
def test_a_write_after_a_rollback_below_its_base_bootstraps_again_and_lands_once(opts, index_root, caplog, options):
    """The run bootstrapped at snapshot 3; the table is rolled back to 1 and written twice (snapshot 3 again, another
    one) before its assign-and-write: nothing of the run is staged yet, so it bootstraps again at the latest
    snapshot (a WARNING names both) and writes against that, as a rewrite would; its commit lands once."""
    spec = SPEC if not options else type(SPEC).from_dict(
        {**SPEC.to_dict(), "partition_keys": [], "options": options})
    create_table(opts, "db.t", spec)
    write(opts, index_root, RUNS, spec=spec)
    run = bootstrap(opts, "db.t", index_root, 2)
    rollback(opts, "db.t", index_root, to_snapshot=1)
    write(opts, index_root, AFTER, first=3, spec=spec)  # snapshot 3 again, another one
    with caplog.at_level("WARNING", logger="airflow_paimon.engine.runs.assign_and_write"):
        written = write_run(run, arrow(STALE, spec), run_id="stale")
    assert written.base_snapshot_id == 3 and written.base_snapshot_fingerprint != run.result.base_snapshot_fingerprint
    assert any("RolledBackError" in r.getMessage() and "bootstrapped again at snapshot 3" in r.getMessage()
               for r in caplog.records), caplog.records
    assert run_commit(CommitSpec.after(written, catalog_options=opts, table="db.t")).snapshot_id == 4
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([RUNS[0], *AFTER, STALE], "id"), "id")


def test_an_index_of_a_rolled_back_snapshot_is_never_taken_for_the_snapshot_reusing_its_id(opts, index_root):
    """A job publishing the index of snapshot 3 while the table is rolled back to 1 (here: the directory put back
    after the rollback). The later commit of the new snapshot 3 replaces it, and a bootstrap that meets it
    rebuilds: key 100, unknown to the stale index, moves partition without staying behind in the old one."""
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS)
    index_uri = layout.index_dir(index_root, "db.t")
    kept = Path(index_root).parent / "stale-index-3"
    shutil.copytree(Path(index_uri) / "snapshot-3", kept)
    rollback(opts, "db.t", index_root, to_snapshot=1)
    shutil.copytree(kept, Path(index_uri) / "snapshot-3")
    stale = read_manifest(index_uri, 3)
    assert write(opts, index_root, AFTER[:1], first=3) == [2]
    boot = bootstrap(opts, "db.t", index_root, 2).result
    assert boot.base_snapshot_id == 2 and boot.index_decision == "reused"
    assert write(opts, index_root, AFTER[1:], first=4) == [3]
    published = read_manifest(index_uri, 3)
    assert published.snapshot_fingerprint != stale.snapshot_fingerprint and published.origin == "committed"
    moved_again = pd.DataFrame({"id": [100, 2], "dt": list("aa"), "v": [7.0, 8]})
    assert write(opts, index_root, [moved_again], first=5) == [4]
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([RUNS[0], *AFTER, moved_again], "id"), "id")

    # the stale manifest put back over the newest one: bootstrap-index sees it is of another snapshot and rebuilds
    shutil.rmtree(Path(index_uri) / "snapshot-4")
    shutil.copytree(kept, Path(index_uri) / "snapshot-4")
    (Path(index_uri) / "snapshot-4" / "manifest.json").write_text(
        (kept / "manifest.json").read_text().replace('"snapshot_id": 3', '"snapshot_id": 4'))
    boot = bootstrap(opts, "db.t", index_root, 2).result
    assert boot.index_decision == "rebuilt" and "rolled back" in boot.reason


def test_rolling_a_deletion_vector_table_back_to_the_append_half_of_a_write_is_refused(opts, warehouse,
                                                                                        index_root):
    """Each write is an APPEND and a COMPACT of one commit identity. Rolled back to the APPEND, the table would
    read as before the write while its level-0 files stay live; the rollback names the snapshots to use."""
    get_or_create_table(opts, "db.t", DV_CROSS)
    batches = [pd.DataFrame({"id": [1, 2, 3], "dt": list("aab"), "v": [1.0, 2, 3]}),
               pd.DataFrame({"id": [1, 4], "dt": list("bb"), "v": [10.0, 4]})]
    assert write(opts, index_root, batches, spec=DV_CROSS) == [2, 4]
    with pytest.raises(ValidationError, match=r"value 3: snapshot 3 is the first half of one commit .* snapshot 4; "
                                              r"roll back to snapshot 4 to keep that write, or to snapshot 2"):
        rollback(opts, "db.t", index_root, to_snapshot=3)
    assert latest_id(opts) == 4
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(batches, "id"), "id")
    assert rollback(opts, "db.t", index_root, to_snapshot=2)["deleted_snapshots"] == [3, 4]
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(batches[:1], "id"), "id")
    compact(get_table(opts, "db.t"), full=True)  # what the refused target would have brought back: nothing
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(batches[:1], "id"), "id")


def test_a_deletion_vector_write_staged_before_a_rollback_lands_neither_half(opts, index_root):
    get_or_create_table(opts, "db.t", DV_CROSS)
    batches = [pd.DataFrame({"id": [1, 2, 3], "dt": list("aab"), "v": [1.0, 2, 3]}),
               pd.DataFrame({"id": [1, 4], "dt": list("bb"), "v": [10.0, 4]}),
               pd.DataFrame({"id": [2, 5], "dt": list("ab"), "v": [20.0, 5]})]
    assert write(opts, index_root, batches[:2], spec=DV_CROSS) == [2, 4]
    stale = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(STALE, DV_CROSS), run_id="stale")
    rollback(opts, "db.t", index_root, to_snapshot=2)
    assert write(opts, index_root, batches[2:], first=2, spec=DV_CROSS) == [4]  # snapshot 4 again
    with pytest.raises(RolledBackError):
        run_commit(stale)
    assert latest_id(opts) == 4
    expected = expected_upsert([batches[0], batches[2]], "id")
    assert_table_equals(get_table(opts, "db.t"), expected, "id")
    assert upsert(bootstrap(opts, "db.t", index_root, 2), arrow(STALE, DV_CROSS), run_id="stale")[0] == 6
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([expected, STALE], "id"), "id")


def _alter_as_another_engine(opts, *changes):
    """A schema change committed straight through Paimon's catalog (as Java or Flink Paimon would)."""
    from pypaimon import CatalogFactory
    from pypaimon.schema.schema_change import SchemaChange

    catalog = CatalogFactory.create(opts)
    catalog.alter_table("db.t", [getattr(SchemaChange, name)(*args) for name, *args in changes], False)


@pytest.mark.parametrize("changes,match", [
    ([("set_option", "deletion-vectors.enabled", "true")],
     r"options changed .*deletion-vectors\.enabled: None -> 'true'"),
    ([("set_option", "changelog-producer", "input")], r"options changed .*changelog-producer"),
    ([("drop_column", ["v"])], r"column v \(DOUBLE\) was dropped"),
], ids=["deletion-vectors", "changelog-producer", "dropped-column"])
def test_a_commit_refuses_a_table_another_engine_changed_after_the_write(opts, index_root, changes, match):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:1])
    staged = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(RUNS[1]), run_id="r1")
    _alter_as_another_engine(opts, *changes)
    with pytest.raises(TableChangedError, match=r"table db\.t: .*" + match + ".*nothing committed"):
        run_commit(staged)
    assert latest_id(opts) == 1


def test_a_column_another_writer_added_meanwhile_does_not_stop_the_commit(opts, index_root):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:1])
    staged = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(RUNS[1]), run_id="r1")
    from pypaimon.schema.data_types import AtomicType

    _alter_as_another_engine(opts, ("add_column", ["note"], AtomicType("STRING")))
    assert run_commit(staged).snapshot_id == 2
    table = get_table(opts, "db.t")
    assert_table_equals(table, expected_upsert(RUNS[:2], "id").assign(note=None), "id")


def test_a_compaction_whose_output_vanished_before_its_commit_commits_nothing(opts, index_root, monkeypatch):
    """Orphan removal with a short older_than during a long compaction: the commit attempt finds a file it adds
    gone, refuses naming it, and the table reads as before."""
    from airflow_paimon.engine.runs import compact as compact_run

    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS)
    rewrite = compact_run.compact_task

    def rewrite_then_lose_output(table, work):
        encoded = rewrite(table, work)
        from airflow_paimon.engine.commit.staging import data_file_paths, decode_message

        message = decode_message(table, encoded)
        new = {f.file_name for f in message.compact_after} - {f.file_name for f in message.compact_before}
        for path in data_file_paths(table, [message]):
            if path.rsplit("/", 1)[-1] in new:
                table.file_io.delete(path)
        return encoded

    import local_runner

    monkeypatch.setattr(local_runner, "compact_task", rewrite_then_lose_output)
    with pytest.raises(MissingFileError, match=r"table db\.t: compacted file .* is missing.*nothing committed"):
        compact(get_table(opts, "db.t"), full=True)
    assert latest_id(opts) == 3
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(RUNS, "id"), "id")


def test_a_compaction_planned_before_a_rollback_is_refused(opts, index_root, monkeypatch):
    """The rollback lands while the buckets are rewritten; the COMPACT commit would delete files the rolled-back
    table does not have and add rows it should not see."""
    from airflow_paimon.engine.compact import commit as compact_commit

    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS)
    check = compact_commit.check_no_conflict
    rolled = []

    def rollback_first(table, plan, messages, latest=None):
        if not rolled:
            rolled.append(rollback(opts, "db.t", index_root, to_snapshot=1))
            write(opts, index_root, AFTER, first=3)  # snapshot 3 again
            latest = None
        return check(table, plan, messages, latest)

    monkeypatch.setattr(compact_commit, "check_no_conflict", rollback_first)
    with pytest.raises(CompactConflictError, match="snapshot 3 is not the snapshot this run started from at the "
                                                   "compaction's plan"):
        compact(get_table(opts, "db.t"), full=True)
    assert latest_id(opts) == 3
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([RUNS[0], *AFTER], "id"), "id")


def test_partition_expiry_plans_its_vector_index_deletes_on_every_attempt(opts, index_root, monkeypatch):
    """A writer marks rows of a partition being dropped while the drop is planned: the drop's first attempt
    loses the snapshot id, its retry drops the writer's new vector index entry of that partition too."""
    from airflow_paimon.engine.maintenance import partition_expiry
    from airflow_paimon.engine.files.deletion_vectors import _vector_entries

    spec = TableSpec.from_dict({**SCHEMA, "partition_keys": ["dt"],
                                "options": {**DV_CROSS.options, "partition.expiration-time": "1 d"}})
    get_or_create_table(opts, "db.t", spec)
    old, new = "2026-01-01", "2026-01-09"
    first = pd.DataFrame({"id": [1, 2, 3, 4], "dt": [old, old, new, new], "v": [1.0, 2, 3, 4]})
    write(opts, index_root, [first], spec=spec)
    racer = pd.DataFrame({"id": [1], "dt": [old], "v": [10.0]})  # marks the old row of key 1 in a vector
    plan = partition_expiry.partition_index_deletes
    raced = []

    def writer_commits_meanwhile(table, at, expired):
        if not raced:
            raced.append(write(opts, index_root, [racer], first=1, spec=spec))
        return plan(table, at, expired)

    monkeypatch.setattr(partition_expiry, "partition_index_deletes", writer_commits_meanwhile)
    from datetime import datetime

    done = partition_expiry.expire_partitions(opts, "db.t", CommitIdentity.for_run("d", "r", "db.t"),
                                              datetime(2026, 1, 10))
    assert done["expired_partitions"] == [{"dt": old}] and raced
    table = get_table(opts, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot()
    assert latest.commit_kind == "OVERWRITE" and latest.id == done["snapshot_id"]
    vectors = _vector_entries(table, latest.index_manifest) if latest.index_manifest else {}
    assert not [k for k in vectors if k[0] == (old,)], vectors
    assert_table_equals(table, first[first.dt == new].reset_index(drop=True), "id")


def test_a_commit_never_reports_success_without_its_snapshot(opts, index_root, monkeypatch):
    """If the snapshot carrying the run's identity cannot be found after the commit, the task fails."""
    from airflow_paimon.engine.commit import committer

    create_table(opts, "db.t", SPEC)
    staged = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(RUNS[0]), run_id="r0")
    find = committer.find_commit
    calls = []

    def lost(*args):
        calls.append(args)
        return None if len(calls) > 1 else find(*args)

    monkeypatch.setattr(committer, "find_commit", lost)
    with pytest.raises(PaimonJobError, match=r"table db\.t: the commit of .* finished but no snapshot carries it"):
        run_commit(staged)


def test_a_tag_of_the_run_s_commit_is_refused_when_a_rollback_gave_its_id_to_another_snapshot(opts, index_root):
    from airflow_paimon.engine.table.lifecycle import create_tag

    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:1])
    committed = in_process_commit(opts, index_root, RUNS[1], "r1")
    assert committed.snapshot_id == 2 and committed.snapshot_fingerprint
    rollback(opts, "db.t", index_root, to_snapshot=1)
    write(opts, index_root, AFTER[:1], first=3)  # snapshot 2 again, another one
    with pytest.raises(RolledBackError, match="snapshot 2 is not the snapshot this run started from at the commit "
                                              "to tag"):
        create_tag(opts, "db.t", "day", committed.snapshot_id, committed.snapshot_fingerprint)
    assert get_table(opts, "db.t").list_tags() == []
    now = get_table(opts, "db.t").snapshot_manager().get_snapshot_by_id(2)
    assert create_tag(opts, "db.t", "day", 2, f"{now.commit_user}:{now.commit_identifier}:{now.time_millis}")["created"]


def in_process_commit(opts, index_root, frame, run_id):
    return run_commit(stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(frame), run_id=run_id))
