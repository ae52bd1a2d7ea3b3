"""The one walk over a table's history (engine/snapshot/history.py): the kept snapshots newest first or on top of a
base, each read only when reached, ending at the first expired one and saying which, through pypaimon's
SnapshotManager and the Airflow side's JSON reader (table_files.py) alike."""
from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.committer import commit_once
from airflow_paimon.engine.snapshot.history import commit_of, fingerprint, first_of_commit, newest_first, since
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.maintenance.rollback import rollback
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.table_files import TableFiles

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"],
                            "options": {"bucket": "1"}})


def commit(opts, key: int, builder=None) -> None:
    """One APPEND snapshot by pypaimon (a builder's commits share its commit identity)."""
    builder = builder or get_table(opts, "db.t").new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(pd.DataFrame({"id": [key], "v": [1.0]}), schema=SPEC.arrow_schema(),
                                           preserve_index=False))
    builder.new_commit().commit(write.prepare_commit())
    write.close()


@pytest.fixture
def table(opts):
    get_or_create_table(opts, "db.t", SPEC)
    for key in range(5):
        commit(opts, key)
    return get_table(opts, "db.t")


def ids(walk) -> list[int]:
    return [s.id for s in walk]


@pytest.fixture
def reads(monkeypatch):
    """The snapshot ids read by id, in order (pypaimon's and the JSON reader's)."""
    from pypaimon.snapshot.snapshot_manager import SnapshotManager

    seen: list[int] = []
    for cls in (SnapshotManager, TableFiles):
        original = cls.get_snapshot_by_id
        monkeypatch.setattr(cls, "get_snapshot_by_id",
                            lambda self, sid, original=original: seen.append(sid) or original(self, sid))
    return seen


def test_newest_first_reads_only_what_the_caller_takes(table, reads):
    walk = newest_first(table)
    assert ids(walk) == [5, 4, 3, 2, 1] and walk.expired is None and walk.earliest_kept is None
    reads.clear()
    walk = newest_first(table)
    assert next(iter(walk)).id == 5 and reads == []  # the latest is not read again
    assert ids(newest_first(table, start=3, after=1)) == [3, 2] and reads == [3, 2]
    latest = table.snapshot_manager().get_latest_snapshot()
    reads.clear()
    assert ids(since(table, 2, latest)) == [3, 4, 5] and reads == [3, 4]
    assert ids(since(table, 5, latest)) == [] and ids(newest_first(table, start=0)) == []


def test_the_walk_ends_at_the_earliest_kept_snapshot(opts, table, reads):
    options = TableOptions.parse("db.t", {"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms"}).expire
    assert expire_snapshots(table, options).earliest_snapshot_id == 4
    table = get_table(opts, "db.t")
    reads.clear()
    walk = newest_first(table)
    assert ids(walk) == [5, 4] and (walk.expired, walk.earliest_kept) == (3, 4)
    assert reads == [4, 3]  # nothing older than the first expired is read
    walk = newest_first(table, after=3)  # the lower bound reached before the end of the kept history
    assert ids(walk) == [5, 4] and walk.expired is None
    latest = table.snapshot_manager().get_latest_snapshot()
    walk = since(table, 1, latest)  # the chain from snapshot 1 is broken at once
    assert ids(walk) == [] and walk.expired == 2
    walk = since(table, 3, latest)
    assert ids(walk) == [4, 5] and walk.expired is None


def test_a_missing_snapshot_in_the_middle_ends_the_walk_both_ways(table):
    os.remove(table.snapshot_manager().get_snapshot_path(3))  # as a delete in flight leaves it
    walk = newest_first(table)
    assert ids(walk) == [5, 4] and walk.earliest_kept == 4
    walk = since(table, 1, table.snapshot_manager().get_latest_snapshot())
    assert ids(walk) == [2] and walk.expired == 3


def test_an_empty_table_has_no_history(opts):
    table = get_or_create_table(opts, "db.t", SPEC)
    walk = newest_first(table)
    assert ids(walk) == [] and (walk.expired, walk.earliest_kept) == (None, None)
    assert ids(since(table, None, None)) == []


def test_ids_reused_after_a_rollback_are_the_new_snapshots(opts, index_root, table):
    before = [fingerprint(s) for s in newest_first(table)]
    rollback(opts, "db.t", index_root, to_snapshot=2)
    commit(opts, 10)
    commit(opts, 11)
    table = get_table(opts, "db.t")
    after = [fingerprint(s) for s in newest_first(table)]
    assert len(after) == 4 and after[2:] == before[3:] and not set(after[:2]) & set(before)


def test_each_snapshot_carries_its_kind_commit_and_properties_in_both_readers(opts, table):
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(pd.DataFrame({"id": [9], "v": [9.0]}), schema=SPEC.arrow_schema(),
                                           preserve_index=False))
    assert commit_once(table, write.prepare_commit(), "airflow-paimon-u", 7, 5, properties={"k": "v"})[0] == 6
    write.close()
    pypaimon_walk = [(s.id, s.commit_kind, commit_of(s), s.properties) for s in newest_first(get_table(opts, "db.t"))]
    json_walk = [(s.id, s.commit_kind, commit_of(s), s.properties) for s in newest_first(TableFiles(opts, "db.t"))]
    assert pypaimon_walk == json_walk
    assert pypaimon_walk[0] == (6, "APPEND", ("airflow-paimon-u", 7), {"k": "v"})
    assert [kind for _, kind, _, _ in pypaimon_walk[1:]] == ["APPEND"] * 5


def test_first_of_commit_walks_back_over_one_commit_identity(opts):
    table = get_or_create_table(opts, "db.t", SPEC)
    commit(opts, 0)
    builder = get_table(opts, "db.t").new_batch_write_builder()
    commit(opts, 1, builder)
    commit(opts, 2, builder)  # snapshots 2 and 3: one commit identity, as a deletion-vector write's two
    table = get_table(opts, "db.t")
    snap = table.snapshot_manager().get_latest_snapshot()
    assert first_of_commit(table, snap) == 2 and first_of_commit(table, snap, first=2) == 2
    assert first_of_commit(table, table.snapshot_manager().get_snapshot_by_id(1)) == 1
