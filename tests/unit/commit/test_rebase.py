"""A commit whose base is no longer the latest snapshot goes on top of what landed when nothing conflicts
(engine/commit/rebase.py): the other writers' APPENDs wrote none of its keys (and, in a dynamic-bucket table,
none of its partitions). Otherwise it is refused as before, nothing committed. Every table is read back
against the pandas oracle in commit order, no key twice; after a rebase the next bootstrap catches the index
up and a write that moves every key converges."""
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.properties import REBASED_OVER
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, in_process, stage_run, upsert
from oracle import assert_table_equals, expected_upsert

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
CROSS = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                             "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
FIXED = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "options": {"bucket": "2"}})
DYNAMIC = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                               "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
VECTORS = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"],
                               "options": {"bucket": "2", "deletion-vectors.enabled": "true"}})
START = pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aaab"), "v": [0.0, 1.0, 2.0, 3.0]})


def frame(ids, dt, v):
    return pd.DataFrame({"id": ids, "dt": [dt] * len(ids), "v": [float(v)] * len(ids)})


def arrow(spec, df):
    return pa.Table.from_pandas(df, schema=spec.arrow_schema(), preserve_index=False)


def race(opts, index_root, spec, a, b):
    """A and B bootstrapped at one snapshot; A's whole run lands, then B's staged write is committed."""
    ctx_a, ctx_b = bootstrap(opts, "db.t", index_root, 2), bootstrap(opts, "db.t", index_root, 2)
    staged_b = stage_run(ctx_b, arrow(spec, b), run_id="b")
    assert upsert(ctx_a, arrow(spec, a), run_id="a") == (2, False)
    return staged_b


def started(warehouse, spec):
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", spec)
    # snapshot 1 (and 2 with vectors)
    upsert(bootstrap(opts, "db.t", index_root, 2), arrow(spec, START), run_id="start")
    return opts, index_root


def test_a_cross_partition_write_of_other_keys_goes_on_top_and_the_index_catches_up(warehouse):
    opts, index_root = started(warehouse, CROSS)
    a = frame([1, 5], "b", 10)   # moves 1 to b, adds 5
    b = frame([2, 6], "c", 20)   # moves 2 to c, adds 6: no key of A's
    result = in_process("commit", race(opts, index_root, CROSS, a, b))
    assert (result.snapshot_id, result.already_committed, result.rebased_over) == (3, False, [2])
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_snapshot_by_id(3).properties == {REBASED_OVER: "2"}  # for the UI page
    assert_table_equals(table, expected_upsert([a, b], "id", START), "id")
    assert read_manifest(f"{index_root}/db.t", 3) is None  # its index would miss A's keys: not published
    # the next bootstrap catches up from A's index over B's snapshot; moving every key again converges
    ctx = bootstrap(opts, "db.t", index_root, 2)
    assert (ctx.result.index_decision, ctx.base_snapshot_id) == ("caught_up", 3)
    then = frame([1, 2, 3, 4, 5, 6], "d", 7)
    assert upsert(ctx, arrow(CROSS, then), run_id="then") == (4, False)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([a, b, then], "id", START), "id")


def test_a_retried_rebased_commit_is_found_not_repeated(warehouse):
    opts, index_root = started(warehouse, CROSS)
    spec_b = race(opts, index_root, CROSS, frame([1], "b", 10), frame([2], "c", 20))
    first, again = run_commit(spec_b), run_commit(spec_b)
    assert (first.snapshot_id, first.rebased_over) == (3, [2])
    assert (again.snapshot_id, again.already_committed) == (3, True)
    assert [s.id for s in get_table(opts, "db.t").snapshot_manager().list_snapshots()] == [1, 2, 3]


@pytest.mark.parametrize("b, why", [
    (frame([1, 6], "c", 20), r"1 key\(s\) written by both, e.g."),   # key 1 written by A too
    (frame([5], "a", 20), r"1 key\(s\) written by both"),             # a new key A added too
])
def test_a_write_of_a_key_the_other_wrote_is_refused(warehouse, b, why):
    opts, index_root = started(warehouse, CROSS)
    a = frame([1, 5], "b", 10)
    spec_b = race(opts, index_root, CROSS, a, b)
    with pytest.raises(StaleIndexError, match=r"db\.t .*snapshot 2 \(APPEND\).*not committed on top of it: " + why):
        run_commit(spec_b)
    table = get_table(opts, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1, 2]
    assert_table_equals(table, expected_upsert([a], "id", START), "id")
    assert upsert(bootstrap(opts, "db.t", index_root, 2), arrow(CROSS, b), run_id="b") == (3, False)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([a, b], "id", START), "id")


def test_a_fixed_bucket_write_of_other_keys_in_the_same_buckets_goes_on_top(warehouse):
    opts, index_root = started(warehouse, FIXED)
    a, b = frame([1, 3, 5, 7], "x", 10), frame([2, 4, 6, 8], "y", 20)  # both write both buckets
    result = in_process("commit", race(opts, index_root, FIXED, a, b))
    assert (result.snapshot_id, result.rebased_over) == (3, [2])
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([a, b], "id", START), "id")


def test_a_dynamic_bucket_write_goes_on_top_only_in_partitions_the_other_did_not_write(warehouse):
    opts, index_root = started(warehouse, DYNAMIC)
    a = frame([10, 11], "a", 10)
    spec_b = race(opts, index_root, DYNAMIC, a, frame([12], "a", 20))  # same partition: its bucket index
    with pytest.raises(StaleIndexError, match=r"partition\(s\) of its bucket index written by both"):
        run_commit(spec_b)
    c = frame([12, 13], "c", 30)  # a partition A did not write
    ctx_a, ctx_c = bootstrap(opts, "db.t", index_root, 2), bootstrap(opts, "db.t", index_root, 2)
    staged_c = stage_run(ctx_c, arrow(DYNAMIC, c), run_id="c")
    d = frame([15, 14], "b", 40)
    assert upsert(ctx_a, arrow(DYNAMIC, d), run_id="d") == (3, False)
    result = in_process("commit", staged_c)
    assert (result.snapshot_id, result.rebased_over) == (4, [3])
    # every id is in one partition only here: the oracle's key is id
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([a, d, c], "id", START), "id")


def test_a_deletion_vector_write_is_never_rebased(warehouse):
    opts, index_root = started(warehouse, VECTORS)
    ctx_a, ctx_b = bootstrap(opts, "db.t", index_root, 2), bootstrap(opts, "db.t", index_root, 2)
    a, b = frame([1], "x", 10), frame([2], "y", 20)  # other keys, but its write marks rows of its base's files
    spec_b = stage_run(ctx_b, arrow(VECTORS, b), run_id="b")
    landed, _ = upsert(ctx_a, arrow(VECTORS, a), run_id="a")
    with pytest.raises(StaleIndexError, match=r"changed since bootstrap.*re-run from bootstrap-index"):
        run_commit(spec_b)
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == landed
    assert_table_equals(table, expected_upsert([a], "id", START), "id")
