"""The engine's tasks run in-process (as the Spark jobs distribute them) against real Paimon tables."""
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, bootstrap_result, upsert
from oracle import assert_table_equals, expected_upsert

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
SCHEMA = SPEC.arrow_schema()


def frame(ids, dts, vs):
    return pd.DataFrame({"id": ids, "dt": dts, "v": [float(v) for v in vs]})


BATCHES = [
    frame([1, 2, 3, 4, 5, 6, 7], list("aaabbaa"), range(7)),
    frame([1, 4, 8, 9, 1], list("bacac"), [10, 40, 80, 90, 11]),  # moves, insert, in-batch duplicate
    frame([1, 2, 10, 3], list("aaba"), [100, 20, 1000, 30]),       # move back, same-partition updates
]


@pytest.mark.parametrize("shards", [1, 3])
def test_batches_match_pandas_oracle(warehouse, shards):
    opts = {"warehouse": warehouse}
    table = get_or_create_table(opts, "db.t", SPEC)
    for i, batch in enumerate(BATCHES):
        ctx = bootstrap(opts, "db.t", warehouse + "/.index", shards)
        upsert(ctx, pa.Table.from_pandas(batch, schema=SCHEMA, preserve_index=False), run_id=f"r{i}")
        assert_table_equals(get_table(opts, "db.t"), expected_upsert(BATCHES[: i + 1], "id"), "id")
    assert len(table.snapshot_manager().list_snapshots()) == len(BATCHES)


def test_same_run_commits_once(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    data = pa.Table.from_pandas(BATCHES[0], schema=SCHEMA, preserve_index=False)
    assert upsert(ctx, data, run_id="same") == (1, False)
    assert upsert(ctx, data, run_id="same") == (1, True)
    assert [s.id for s in get_table(opts, "db.t").snapshot_manager().list_snapshots()] == [1]


def test_commit_refused_when_table_moved_since_bootstrap(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    stale = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), pa.Table.from_pandas(
        BATCHES[0], schema=SCHEMA, preserve_index=False), run_id="other")
    with pytest.raises(StaleIndexError, match="table db.t changed since bootstrap at snapshot None"):
        upsert(stale, pa.Table.from_pandas(BATCHES[1], schema=SCHEMA, preserve_index=False), run_id="late")
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(BATCHES[:1], "id"), "id")


def test_continues_a_table_written_by_pypaimon_rust_and_back(warehouse):
    opts = {"warehouse": warehouse}
    native_spec = TableSpec(SPEC.columns, SPEC.primary_keys, SPEC.partition_keys,
                            {**SPEC.options, "write.native.enabled": "true"})
    table = get_or_create_table(opts, "db.t", native_spec)

    def native_write(df):
        builder = get_table(opts, "db.t").new_batch_write_builder()
        write = builder.new_write()
        write.write_arrow(pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False))
        builder.new_commit().commit(write.prepare_commit())
        write.close()

    native_write(BATCHES[0])
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
           pa.Table.from_pandas(BATCHES[1], schema=SCHEMA, preserve_index=False), run_id="ours")
    assert_table_equals(table, expected_upsert(BATCHES[:2], "id"), "id")
    native_write(BATCHES[2])  # and the native writer continues our table
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(BATCHES, "id"), "id")


def test_bootstrap_catches_up_another_writers_files_as_a_rebuild_would(warehouse):
    """The one bootstrap orchestration, run in-process: after pypaimon-rust appended, the index is caught up
    from the files it added (not rebuilt), holds what a rebuild from the table holds, and the next run lands
    right."""
    from faults.harness import index_content

    opts = {"warehouse": warehouse}
    native_spec = TableSpec(SPEC.columns, SPEC.primary_keys, SPEC.partition_keys,
                            {**SPEC.options, "write.native.enabled": "true"})
    get_or_create_table(opts, "db.t", native_spec)
    assert bootstrap_result(opts, "db.t", warehouse + "/.index", 2).index_decision == "rebuilt"
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow_of(BATCHES[0]), run_id="ours")
    builder = get_table(opts, "db.t").new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(arrow_of(BATCHES[1]))
    builder.new_commit().commit(write.prepare_commit())
    write.close()

    caught = bootstrap_result(opts, "db.t", warehouse + "/.index", 2)
    rebuilt = bootstrap_result(opts, "db.t", warehouse + "/.fresh-index", 2)
    assert (caught.index_decision, caught.base_snapshot_id) == ("caught_up", 2), caught
    assert 1 <= caught.data_files_read < rebuilt.data_files_read, (caught, rebuilt)  # only the appended files
    assert rebuilt.index_decision == "rebuilt" and rebuilt.keys == caught.keys == 9
    assert index_content(caught.index_uri, 2) == index_content(rebuilt.index_uri, 2)
    again = bootstrap_result(opts, "db.t", warehouse + "/.index", 2)
    assert (again.index_decision, again.data_files_read) == ("reused", 0)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow_of(BATCHES[2]), run_id="ours-2")
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(BATCHES, "id"), "id")


def arrow_of(df):
    return pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)
