"""Schema evolution on write (engine/table/schema_evolution.py): a source or declared column the table lacks is added,
types widen with ``widen``; one new Paimon schema before anything is staged, made once per run; the global
index survives it; everything else is refused before the table is touched."""
import os
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.runs.bootstrap_index import bootstrap_index
from airflow_paimon.engine.files.scan import added_entries, latest_snapshot, live_entries
from airflow_paimon.engine.table.schema_evolution import evolve, plan_for_source, source_columns
from airflow_paimon.engine.jobs.specs import BootstrapSpec
from airflow_paimon.engine.table.catalog import open_catalog
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from compaction_tables import rust_read
from java_paimon import assert_java_reads_as_pypaimon, missing
from local_runner import LocalIndexTasks, bootstrap, bootstrap_result, compact, upsert, write_run
from oracle import assert_table_equals, expected_upsert, read_table

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
SPEC = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
DAY1 = pd.DataFrame({"id": [1, 2, 3, 4, 5], "dt": list("aabba"), "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
# day 2: a new column; key 1 moves partition, 3 updates in place, 6 and 7 are new
DAY2 = pd.DataFrame({"id": [1, 3, 6, 7], "dt": list("bbab"), "v": [10.0, 30.0, 60.0, 70.0],
                     "email": ["a@x", None, "f@x", "g@x"]})
DAY2_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.float64()), ("email", pa.string())])


def schema_ids(warehouse) -> list[int]:
    return sorted(int(n.split("-")[1]) for n in os.listdir(os.path.join(warehouse, "db.db", "t", "schema")))


def day1_table(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
           pa.Table.from_pandas(DAY1, schema=SPEC.arrow_schema(), preserve_index=False), run_id="day1")
    return opts


def day2(warehouse, run_id="day2", evolution="add_columns"):
    opts = {"warehouse": warehouse}
    return upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
                  pa.Table.from_pandas(DAY2, schema=DAY2_SCHEMA, preserve_index=False), run_id=run_id,
                  schema_evolution=evolution)


@pytest.mark.slow
def test_add_columns_adds_a_nullable_column_older_rows_read_null_and_the_index_survives(warehouse):
    opts = day1_table(warehouse)
    snapshot, _ = day2(warehouse)
    table = get_table(opts, "db.t")
    assert [(f.name, str(f.type)) for f in table.table_schema.fields] == [
        ("id", "BIGINT NOT NULL"), ("dt", "STRING"), ("v", "DOUBLE"), ("email", "STRING")]
    assert schema_ids(warehouse) == [0, 1]
    # the day-2 files carry the new schema, the snapshot too; day 1's keep theirs
    snap = table.snapshot_manager().get_snapshot_by_id(snapshot)
    assert snap.schema_id == 1 and {e.file.schema_id for e in added_entries(table, snap)} == {1}
    assert {e.file.schema_id for e in live_entries(table, snap)} == {0, 1}
    expected = expected_upsert([DAY1.assign(email=None), DAY2], "id")
    assert_table_equals(table, expected, "id")
    assert read_table(table).set_index("id").loc[[2, 4, 5], "email"].isna().all()

    # the next bootstrap keeps the index (same keys) — its table_schema lacking the column the source added —
    # and the next run moves keys correctly with it
    boot = bootstrap_index(BootstrapSpec(catalog_options=opts, table="db.t", shards=2, index_root=warehouse + "/.index",
                                         table_spec=SPEC.to_dict(), schema_evolution="add_columns"), LocalIndexTasks())
    assert boot.index_decision == "reused", boot.reason
    assert schema_ids(warehouse) == [0, 1]
    day3 = pd.DataFrame({"id": [2, 6, 8], "dt": list("bba"), "v": [20.0, 61.0, 80.0], "email": ["b@x", None, "h@x"]})
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), pa.Table.from_pandas(
        day3, schema=DAY2_SCHEMA, preserve_index=False), run_id="day3")  # schema_evolution="none": same columns
    expected = expected_upsert([DAY1.assign(email=None), DAY2, day3], "id")
    assert_table_equals(get_table(opts, "db.t"), expected, "id")

    # compaction merges files of both schemas; every reader agrees
    assert compact(get_table(opts, "db.t"), full=True)["compacted_buckets"] > 0
    table = get_table(opts, "db.t")
    assert {e.file.schema_id for e in live_entries(table, latest_snapshot(table))} == {1}
    assert_table_equals(table, expected, "id")
    rust = rust_read(warehouse)
    assert not rust["id"].duplicated().any()
    pd.testing.assert_frame_equal(rust[list(expected.columns)].sort_values("id").reset_index(drop=True), expected,
                                  check_dtype=False)
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])


def test_old_schema_files_are_read_by_java_and_rust_before_compaction(warehouse):
    opts = day1_table(warehouse)
    day2(warehouse)
    expected = expected_upsert([DAY1.assign(email=None), DAY2], "id")
    rust = rust_read(warehouse)
    pd.testing.assert_frame_equal(rust[list(expected.columns)].sort_values("id").reset_index(drop=True), expected,
                                  check_dtype=False)
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])
    assert_table_equals(get_table(opts, "db.t"), expected, "id")


def test_bootstrap_catches_up_across_an_added_column(warehouse):
    """The newest index is of a snapshot before the schema change: the files appended since are applied."""
    opts = day1_table(warehouse)
    snapshot, _ = day2(warehouse)
    index = os.path.join(warehouse, ".index", "db.t", f"snapshot-{snapshot}")
    for name in os.listdir(index):  # as if the day-2 commit died before publishing its index
        os.remove(os.path.join(index, name))
    os.rmdir(index)
    boot = bootstrap_result(opts, "db.t", warehouse + "/.index", 2)
    assert boot.index_decision == "caught_up", boot.reason
    assert boot.keys == 7


def test_widen_grows_value_column_types_from_the_source(warehouse):
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": [["id", "INT"], ["n", "INT"], ["f", "FLOAT"], ["d", "DECIMAL(10, 2)"],
                                            ["s", "VARCHAR(5)"]],
                                "primary_keys": ["id"], "options": {"bucket": "2"}})
    get_or_create_table(opts, "db.t", spec)
    first = pd.DataFrame({"id": [1, 2], "n": [1, 2], "f": [0.5, 1.5], "d": [Decimal("1.25"), Decimal("2.50")],
                          "s": ["ab", "cd"]})
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 1),
           pa.Table.from_pandas(first, schema=spec.arrow_schema(), preserve_index=False), run_id="r1")
    wider = pa.schema([("id", pa.int64()), ("n", pa.int64()), ("f", pa.float64()), ("d", pa.decimal128(14, 2)),
                       ("s", pa.string())])
    second = pd.DataFrame({"id": [2, 3], "n": [2 ** 40, 3], "f": [0.1, 2.5], "d": [Decimal("123456789012.34"),
                                                                                    Decimal("3.00")], "s": ["ef", "g"]})
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 1),
           pa.Table.from_pandas(second, schema=wider, preserve_index=False), run_id="r2", schema_evolution="widen")
    table = get_table(opts, "db.t")
    # value columns widened; the key keeps its type, a string source never changes a VARCHAR length
    assert [str(f.type) for f in table.table_schema.fields] == ["INT NOT NULL", "BIGINT", "DOUBLE", "DECIMAL(14, 2)",
                                                               "VARCHAR(5)"]
    assert schema_ids(warehouse) == [0, 1]
    # the next run's bootstrap still declares the first types: the table stays wider, nothing changes
    boot = bootstrap_index(BootstrapSpec(catalog_options=opts, table="db.t", shards=1, index_root=warehouse + "/.index",
                                         table_spec=spec.to_dict(), schema_evolution="widen"), LocalIndexTasks())
    assert boot.index_decision == "not_needed" and schema_ids(warehouse) == [0, 1]
    expected = expected_upsert([first.astype({"f": "float64"}), second], "id")
    actual = assert_table_equals(table, expected, "id")
    assert actual.loc[actual["id"] == 1, "f"].item() == 0.5 and actual.loc[actual["id"] == 2, "n"].item() == 2 ** 40
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])


def test_declared_schema_grows_with_bootstrap(warehouse):
    """PaimonBootstrapIndexOperator's table_schema gained a column and a longer VARCHAR."""
    opts = day1_table(warehouse)
    grown = {"columns": COLUMNS + [["email", "VARCHAR(20)"]], "primary_keys": ["id"], "partition_keys": ["dt"],
             "options": SPEC.options}

    def boot(table_spec, evolution):
        return bootstrap_index(BootstrapSpec(catalog_options=opts, table="db.t", shards=2,
                                             index_root=warehouse + "/.index", table_spec=table_spec,
                                             schema_evolution=evolution), LocalIndexTasks())

    with pytest.raises(ValidationError, match="differs from the declared schema"):
        boot(grown, "none")
    assert boot(grown, "add_columns").index_decision == "reused"
    assert str(get_table(opts, "db.t").table_schema.fields[-1].type) == "VARCHAR(20)"
    assert boot(grown, "add_columns").index_decision == "reused"  # the next run: nothing to change
    longer = {**grown, "columns": COLUMNS + [["email", "VARCHAR(40)"]]}
    with pytest.raises(ValidationError, match="needs schema_evolution='widen'") as err:
        boot(longer, "add_columns")
    assert err.value.column == "email"
    assert boot(longer, "widen").index_decision == "reused"
    assert str(get_table(opts, "db.t").table_schema.fields[-1].type) == "VARCHAR(40)"
    assert schema_ids(warehouse) == [0, 1, 2]
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([DAY1.assign(email=None)], "id"), "id")


@pytest.mark.parametrize("columns, keys, column, match", [
    (COLUMNS[:2], ["id"], "v", "never drops or renames"),                               # drop
    (COLUMNS[:2] + [["value", "DOUBLE"]], ["id"], "v", "never drops or renames"),       # rename
    (COLUMNS[:2] + [["v", "FLOAT"]], ["id"], "v", "DOUBLE cannot change to FLOAT"),     # narrow
    (COLUMNS[:2] + [["v", "STRING"]], ["id"], "v", "never narrows or converts"),        # convert
    ([["id", "INT"]] + COLUMNS[1:], ["id"], "id", "key column type BIGINT cannot change to INT"),
])
def test_declared_changes_never_made_are_refused_before_the_table_is_touched(warehouse, columns, keys, column, match):
    opts = day1_table(warehouse)
    with pytest.raises(ValidationError, match=match) as err:
        get_or_create_table(opts, "db.t", TableSpec.from_dict({
            "columns": columns + [["extra", "INT"]], "primary_keys": keys, "partition_keys": ["dt"],
            "options": SPEC.options}), "widen")
    assert err.value.table == "db.t" and err.value.column == column
    assert schema_ids(warehouse) == [0]  # not even the extra column was added


def test_a_declared_key_change_is_refused(warehouse):
    opts = day1_table(warehouse)
    with pytest.raises(ValidationError, match=r"primary keys \['id'\] != declared \['id', 'dt'\]"):
        get_or_create_table(opts, "db.t", TableSpec.from_dict({
            "columns": COLUMNS + [["extra", "INT"]], "primary_keys": ["id", "dt"], "partition_keys": ["dt"],
            "options": SPEC.options}), "add_columns")
    assert schema_ids(warehouse) == [0]


@pytest.mark.parametrize("source, column, match", [
    (pa.table({"id": [1], "dt": ["a"], "email": ["x"]}), "v", "never drops or renames"),           # drop
    (pa.table({"id": [1], "dt": ["a"], "value": [1.0]}), "v", "never drops or renames"),           # rename
    (pa.table({"id": [1], "dt": ["a"], "v": [1.0], "nothing": pa.nulls(1)}), "nothing", "no Paimon type"),
    (pa.table({"id": [1], "dt": ["a"], "v": [1.0], "_KEY_id": [1]}), "_KEY_id", "its own columns"),
    (pa.table({"id": [1], "dt": ["a"], "v": [1.0], "Email": ["x"], "email": ["y"]}), "email", "differ only in case"),
])
def test_source_changes_never_made_are_refused_with_nothing_staged(warehouse, source, column, match):
    opts = day1_table(warehouse)
    ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    with pytest.raises(ValidationError, match=match) as err:
        write_run(ctx, source, run_id="bad", schema_evolution="widen")
    assert err.value.table == "db.t" and err.value.column == column
    assert schema_ids(warehouse) == [0]
    staging = os.path.join(ctx.staging_root, "db.t")
    assert not os.path.exists(staging) or not any(files for _, _, files in os.walk(staging))
    assert latest_snapshot(get_table(opts, "db.t")).id == 1


def test_a_retried_run_alters_once(warehouse):
    """The first attempt dies after the schema change, before staging: the retry finds the column there."""
    opts = day1_table(warehouse)
    source = pa.Table.from_pandas(DAY2, schema=DAY2_SCHEMA, preserve_index=False)

    def dies(*_):
        raise RuntimeError("executor lost")

    ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    with pytest.raises(RuntimeError, match="executor lost"):
        write_run(ctx, source, run_id="day2", schema_evolution="add_columns", write=dies)
    assert schema_ids(warehouse) == [0, 1]  # all a failed run leaves: the nullable column
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([DAY1.assign(email=None)], "id"), "id")
    assert upsert(ctx, source, run_id="day2", schema_evolution="add_columns") == (2, False)
    assert upsert(ctx, source, run_id="day2", schema_evolution="add_columns") == (2, True)  # already committed
    assert schema_ids(warehouse) == [0, 1]
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([DAY1.assign(email=None), DAY2], "id"), "id")


def test_a_concurrent_identical_alter_is_not_an_error(warehouse):
    """Another attempt added the column between this one's look at the table and its alter."""
    opts = day1_table(warehouse)
    stale = get_table(opts, "db.t")
    columns = source_columns("db.t", DAY2_SCHEMA)
    open_catalog(opts).alter_table("db.t", plan_for_source(stale, "db.t", columns, "add_columns"))
    table = evolve(opts, "db.t", stale, lambda t: plan_for_source(t, "db.t", columns, "add_columns"))
    assert table.table_schema.id == 1 and schema_ids(warehouse) == [0, 1]
    assert [f.name for f in table.table_schema.fields] == ["id", "dt", "v", "email"]


def test_unknown_schema_evolution_is_refused(warehouse):
    day1_table(warehouse)
    with pytest.raises(ValidationError, match="schema_evolution must be one of") as err:
        day2(warehouse, evolution="anything")
    assert err.value.value == "anything" and schema_ids(warehouse) == [0]
