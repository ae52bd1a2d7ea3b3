"""Two writers on one table: the commit lands as exactly the snapshot after the one its index is right for,
or raises StaleIndexError with nothing committed; the loser's re-run from bootstrap converges."""
import pandas as pd
import pyarrow as pa
import pytest
from pypaimon.write.file_store_commit import FileStoreCommit

from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.runs.commit import run_commit
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_upsert

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
SCHEMA = SPEC.arrow_schema()
START = pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aaaa"), "v": [0.0, 1.0, 2.0, 3.0]})
A = pd.DataFrame({"id": [1, 2, 5], "dt": list("bbb"), "v": [10.0, 20.0, 50.0]})   # moves 1, 2 to b
B = pd.DataFrame({"id": [1, 3, 6], "dt": list("ccc"), "v": [100.0, 30.0, 60.0]})  # moves 1, 3 to c
THEN = pd.DataFrame({"id": [1, 2, 3, 5, 6], "dt": list("aaaaa"), "v": [7.0, 7.0, 7.0, 7.0, 7.0]})


def arrow(df):
    return pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)


@pytest.fixture
def table_at_s(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(START), run_id="start")
    return opts, warehouse + "/.index"


def commit_a_inside_b(monkeypatch, ctx_a, writer_b: str):
    """A's whole run lands while B's commit is between its check and its snapshot creation: the window in
    which pypaimon's APPEND retry used to put B on top of A unchecked."""
    original, fired = FileStoreCommit._try_commit_once, []

    def racing(self, *args, **kwargs):
        if not fired and self.commit_user == writer_b:
            fired.append(upsert(ctx_a, arrow(A), run_id="a"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FileStoreCommit, "_try_commit_once", racing)
    return fired



def test_second_writer_refused_not_retried_onto_next_snapshot(table_at_s, monkeypatch):
    opts, index_root = table_at_s
    ctx_a, ctx_b = bootstrap(opts, "db.t", index_root, 2), bootstrap(opts, "db.t", index_root, 2)
    assert ctx_a.base_snapshot_id == ctx_b.base_snapshot_id == 1
    spec_b = stage_run(ctx_b, arrow(B), run_id="b")
    fired = commit_a_inside_b(monkeypatch, ctx_a, spec_b.commit_user)
    with pytest.raises(StaleIndexError, match=r"db\.t .*snapshot 2 \(APPEND\) by .*re-run from bootstrap-index"):
        run_commit(spec_b)
    assert fired == [(2, False)]
    monkeypatch.undo()
    table = get_table(opts, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1, 2]
    assert_table_equals(table, expected_upsert([A], "id", START), "id")
    assert read_manifest(f"{index_root}/db.t", 3) is None  # no index for a snapshot B never made

    # B's re-run (same DAG run) from bootstrap converges, and the index after it is right: a third write that
    # moves every key back matches the oracle with no key twice.
    assert upsert(bootstrap(opts, "db.t", index_root, 2), arrow(B), run_id="b") == (3, False)
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(THEN), run_id="then")
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([A, B, THEN], "id", START), "id")


def test_first_writer_wins_second_refused(table_at_s):
    opts, index_root = table_at_s
    ctx_a, ctx_b = bootstrap(opts, "db.t", index_root, 2), bootstrap(opts, "db.t", index_root, 2)
    spec_b = stage_run(ctx_b, arrow(B), run_id="b")
    assert upsert(ctx_a, arrow(A), run_id="a") == (2, False)
    with pytest.raises(StaleIndexError):
        run_commit(spec_b)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([A], "id", START), "id")
    assert upsert(bootstrap(opts, "db.t", index_root, 2), arrow(B), run_id="b") == (3, False)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([A, B], "id", START), "id")


def test_commit_of_one_run_called_ten_times_makes_one_snapshot(table_at_s):
    opts, index_root = table_at_s
    spec = stage_run(bootstrap(opts, "db.t", index_root, 2), arrow(A), run_id="a")
    results = [run_commit(spec) for _ in range(10)]
    assert [r.snapshot_id for r in results] == [2] * 10
    assert [r.already_committed for r in results] == [False] + [True] * 9
    assert [s.id for s in get_table(opts, "db.t").snapshot_manager().list_snapshots()] == [1, 2]
    assert read_manifest(f"{index_root}/db.t", 2).origin == "committed"
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([A], "id", START), "id")
