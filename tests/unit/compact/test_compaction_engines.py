"""Compaction of partial-update and aggregation tables: several batches (with -U/-D records where the table
allows them) written by pypaimon or by the engine's bucket writer, read back before and after universal and
full compaction, against a row-by-row model of Paimon's PartialUpdateMergeFunction / AggregateMergeFunction."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.write.file_store_commit import FileStoreCommit

from airflow_paimon.engine.assign.fixed import fixed_buckets
from airflow_paimon.engine.merge.merge_function import merge_key_values
from airflow_paimon.engine.errors import PaimonJobError, ValidationError
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.files.scan import buckets_at, file_path, latest_snapshot
from airflow_paimon.engine.files.data_files import read_columns
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.write.bucket_writer import write_bucket
from compaction_tables import bucket_files
from local_runner import compact
from oracle import read_table
from tests.unit.compact.test_compaction import assert_one_run_at_max_level

KEYS = ["id"]
PU_COLUMNS = [["id", "BIGINT"], ["v", "DOUBLE"], ["w", "STRING"], ["s", "BIGINT"]]
AGG_FUNCTIONS = {"a": ("BIGINT", "sum"), "b": ("DOUBLE", "sum"), "c": ("DOUBLE", "product"), "d": ("BIGINT", "max"),
                 "e": ("STRING", "min"), "f": ("BOOLEAN", "bool_and"), "g": ("BOOLEAN", "bool_or"),
                 "h": ("STRING", "first_value"), "i": ("STRING", "first_non_null_value"),
                 "j": ("DOUBLE", "last_value"), "k": ("DOUBLE", None)}  # k: the default, last_non_null_value
AGG_COLUMNS = [["id", "BIGINT"], *[[n, t] for n, (t, _) in AGG_FUNCTIONS.items()], ["s", "BIGINT"]]


def make_table(warehouse, columns, options, by_pypaimon=False):
    spec = TableSpec.from_dict({"columns": columns, "primary_keys": KEYS, "options": {"bucket": "2", **options}})
    if by_pypaimon:  # as another engine would, without this provider's option checks
        catalog = CatalogFactory.create({"warehouse": warehouse})
        catalog.create_database("db", True)
        catalog.create_table("db.t", Schema.from_pyarrow_schema(spec.arrow_schema(), primary_keys=KEYS,
                                                                options=spec.options), False)
    else:
        get_or_create_table({"warehouse": warehouse}, "db.t", spec)
    return get_table({"warehouse": warehouse}, "db.t"), spec.arrow_schema()


def reload(warehouse):
    return get_table({"warehouse": warehouse}, "db.t")


def pypaimon_write(table, df, schema):
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(df, schema=schema, preserve_index=False))
    builder.new_commit().commit(write.prepare_commit())
    write.close()


def engine_write(table, df, schema, kinds, identifier):
    """One batch (unique keys) with its row kinds through the engine's bucket writer, one snapshot."""
    rows = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    snap = latest_snapshot(table)
    top = {(bf.partition, bf.bucket): bf.max_sequence_number for bf in buckets_at(table, snap)} if snap else {}
    buckets = fixed_buckets(table, rows)
    messages = []
    for b in np.unique(buckets).tolist():
        idx = np.flatnonzero(buckets == b)
        messages.append(write_bucket(table, (), b, rows.take(pa.array(idx)), pa.array(kinds[idx], pa.int8()),
                                     top.get(((), b), -1)))
    commit = FileStoreCommit(table.new_snapshot_commit(), table, "engine-test")
    try:
        commit.commit(messages, identifier)
    finally:
        commit.close()


def random_batches(columns, n, seed, keys=40, rows=25, null_rate=0.3, seq_nulls=False):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        df = pd.DataFrame({"id": rng.choice(keys, rows, replace=False).astype("int64")})
        for name, typ in columns[1:]:
            if name == "s":
                df["s"] = pd.array(rng.integers(0, 5, rows) if seq_nulls else np.full(rows, i), dtype="Int64")
                if seq_nulls:
                    df.loc[rng.random(rows) < 0.2, "s"] = pd.NA
                continue
            if typ == "BIGINT":
                col = pd.array(rng.integers(-50, 50, rows), dtype="Int64")
            elif typ == "DOUBLE":  # dyadic values: sums and products are exact in any order
                col = pd.array(rng.choice([0.5, 1.0, 2.0, -0.25, 4.0], rows), dtype="Float64")
            elif typ == "BOOLEAN":
                col = pd.array(rng.random(rows) < 0.7, dtype="boolean")
            else:
                col = pd.array([f"x{j}" for j in rng.integers(0, 30, rows)], dtype="string")
            col[rng.random(rows) < null_rate] = pd.NA
            df[name] = col
        out.append(df)
    return out


# ---------------------------------------------------------------- Paimon's merge functions, row by row

def _is_retract(kind):
    return kind in (1, 3)


def paimon_merge(records, engine, options, names):
    """Java's ReducerMergeFunctionWrapper around the engine's merge function: [(kind, values)] in merge order."""
    if len(records) == 1:
        return records[0]
    if engine == "partial-update":
        ignore = options.get("ignore-delete") == "true"
        remove = options.get("partial-update.remove-record-on-delete") == "true"
        row, filled, meet, deleted = {n: None for n in names}, False, False, False
        for kind, vals in records:
            deleted = False
            if _is_retract(kind):
                if not filled:
                    row, filled = dict(vals), True
                if ignore:
                    continue
                if remove:
                    if kind == 3:
                        row, deleted = dict(vals), True
                    continue
                raise AssertionError("partial-update refuses retractions")
            row.update({n: x for n, x in vals.items() if x is not None})
            meet = filled = True
        return (3 if deleted or not meet else 0), row
    acc, seen = {n: None for n in names}, {n: False for n in names}
    for kind, vals in records:
        for n in names:
            fn = agg_function(n, options)
            x, a = vals[n], acc[n]
            if _is_retract(kind):
                if options.get(f"fields.{n}.ignore-retract") == "true":
                    continue
                acc[n] = {"primary_key": x, "last_value": None, "last_non_null_value": a if x is None else None,
                          "sum": (a if x is None else (-x if a is None else a - x))}[fn]
                continue
            if fn in ("first_value", "first_non_null_value"):
                if not seen[n] and (fn == "first_value" or x is not None):
                    acc[n], seen[n] = x, True
            elif fn in ("primary_key", "last_value"):
                acc[n] = x
            elif x is None or a is None:
                acc[n] = a if x is None else x
            else:
                acc[n] = AGGREGATES[fn](a, x)
    return 0, acc


AGGREGATES = {"last_non_null_value": lambda a, x: x, "sum": lambda a, x: a + x, "product": lambda a, x: a * x,
              "max": max, "min": min, "bool_and": lambda a, x: a and x, "bool_or": lambda a, x: a or x}


def agg_function(name, options):
    if name in options.get("sequence.field", "").split(","):
        return "last_value"
    if name in KEYS:
        return "primary_key"
    return options.get(f"fields.{name}.aggregate-function") or "last_non_null_value"


def expected_rows(batches, kinds, engine, options, names):
    """The table Paimon reads: every key's records merged in sequence.field (nulls first) then batch order."""
    seq = options.get("sequence.field")
    descending = options.get("sequence.field.sort-order") == "descending"
    by_key = {}
    for i, (df, ks) in enumerate(zip(batches, kinds)):
        for rec, kind in zip(df.astype(object).where(df.notna(), None).to_dict("records"), ks):
            by_key.setdefault(rec["id"], []).append((i, int(kind), rec))
    out = []
    for recs in by_key.values():
        if seq:  # nulls first, then the sequence field in its order, then batch (sequence number) order
            recs = sorted(recs, key=lambda r: (r[2][seq] is not None, 0 if r[2][seq] is None
                                               else -r[2][seq] if descending else r[2][seq], r[0]))
        kind, row = paimon_merge([(k, r) for _, k, r in recs], engine, options, names)
        if kind in (0, 2):
            out.append(row)
    return normalize(pd.DataFrame(out, columns=names))


def normalize(df):
    df = df.astype(object).where(df.notna(), None)
    return df.sort_values("id").reset_index(drop=True)


def pypaimon_rows(table, names):
    return normalize(read_table(table)[names])


def raw_rows(table, names):
    """The live files read as they are (after a full compaction: one key-unique run per bucket)."""
    parts = [read_columns(file_path(table, e), names) for es in bucket_files(table).values() for e in es]
    return normalize(pa.concat_tables(parts).to_pandas())


def assert_rows(actual, expected):
    assert not actual["id"].duplicated().any()
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)


# ---------------------------------------------------------------- partial-update

def check_universal_then_full(warehouse, columns, options, engine, seed):
    """pypaimon-written batches read the same (and as the model says) before, after a universal and after a
    full compaction, which leaves one run per bucket at the max level."""
    table, schema = make_table(warehouse, columns, options)
    data = random_batches(columns, 8, seed=seed)
    for df in data:
        pypaimon_write(table, df, schema)
    names = [c for c, _ in columns]
    expected = expected_rows(data, [np.zeros(len(d), np.int8) for d in data], engine, options, names)
    assert_rows(pypaimon_rows(reload(warehouse), names), expected)  # pypaimon merges on read

    assert compact(reload(warehouse), run_id="u", scope="table")["compacted_buckets"] > 0
    assert latest_snapshot(reload(warehouse)).commit_kind == "COMPACT"
    assert_rows(pypaimon_rows(reload(warehouse), names), expected)
    compact(reload(warehouse), run_id="f", full=True, scope="table")
    table = reload(warehouse)
    assert_one_run_at_max_level(table, max_level=3)  # num-levels = trigger + 1
    assert_rows(pypaimon_rows(table, names), expected)
    assert_rows(raw_rows(table, names), expected)


@pytest.mark.parametrize("sequence", [None, "ascending", "descending"])
def test_partial_update_universal_then_full_compaction(warehouse, sequence):
    options = {"merge-engine": "partial-update", "num-sorted-run.compaction-trigger": "3"}
    if sequence:
        options.update({"sequence.field": "s", "sequence.field.sort-order": sequence})
    check_universal_then_full(warehouse, PU_COLUMNS, options, "partial-update", seed=11)


def test_partial_update_sequence_field_with_nulls_full_compaction(warehouse):
    options = {"merge-engine": "partial-update", "sequence.field": "s"}
    table, schema = make_table(warehouse, PU_COLUMNS, options)
    data = random_batches(PU_COLUMNS, 6, seed=4, seq_nulls=True)
    for df in data:
        pypaimon_write(table, df, schema)
    names = [c for c, _ in PU_COLUMNS]
    expected = expected_rows(data, [np.zeros(len(d), np.int8) for d in data], "partial-update", options, names)
    assert_rows(pypaimon_rows(reload(warehouse), names), expected)
    compact(reload(warehouse), full=True, scope="table")
    table = reload(warehouse)
    assert_one_run_at_max_level(table)
    assert_rows(pypaimon_rows(table, names), expected)


def retraction_table(warehouse, columns, options, seed, n=6, kinds_p=(0.45, 0.15, 0.25, 0.15)):
    """Batches of +I/-U/+U/-D records written by the engine; returns the batches and their kinds."""
    _, schema = make_table(warehouse, columns, options)
    data = random_batches(columns, n, seed=seed, keys=30, rows=20)
    rng = np.random.default_rng(seed + 100)
    kinds = [rng.choice([0, 1, 2, 3], len(d), p=kinds_p).astype(np.int8) for d in data]
    for i, (df, ks) in enumerate(zip(data, kinds)):
        engine_write(reload(warehouse), df, schema, ks, i)
    return data, kinds


def check_full_with_retractions(warehouse, columns, options, engine, seed):
    """Engine-written batches with retractions, fully compacted: the max-level files hold exactly the model's
    rows (read raw: pypaimon refuses tables with retractions or these options)."""
    data, kinds = retraction_table(warehouse, columns, options, seed=seed)
    names = [c for c, _ in columns]
    compact(reload(warehouse), full=True, scope="table")
    table = reload(warehouse)
    assert_one_run_at_max_level(table)
    assert_rows(raw_rows(table, names), expected_rows(data, kinds, engine, options, names))


@pytest.mark.parametrize("option", ["partial-update.remove-record-on-delete", "ignore-delete"])
def test_partial_update_retractions_full_compaction(warehouse, option):
    options = {"merge-engine": "partial-update", option: "true"}
    check_full_with_retractions(warehouse, PU_COLUMNS, options, "partial-update", seed=21)


def test_partial_update_refuses_retractions_it_cannot_merge(warehouse):
    data, kinds = retraction_table(warehouse, PU_COLUMNS, {"merge-engine": "partial-update"}, seed=5)
    with pytest.raises(PaimonJobError,
                       match="partial-update cannot merge the .* -U/-D records.*remove-record-on-delete"):
        compact(reload(warehouse), full=True, scope="table")
    assert latest_snapshot(reload(warehouse)).commit_kind != "COMPACT"


# ---------------------------------------------------------------- aggregation

def agg_options(**extra):
    options = {"merge-engine": "aggregation", "num-sorted-run.compaction-trigger": "3", **extra}
    options.update({f"fields.{n}.aggregate-function": fn for n, (_, fn) in AGG_FUNCTIONS.items() if fn})
    return options


@pytest.mark.parametrize("sequence", [False, True])
def test_aggregation_universal_then_full_compaction(warehouse, sequence):
    options = agg_options(**({"sequence.field": "s"} if sequence else {}))
    check_universal_then_full(warehouse, AGG_COLUMNS, options, "aggregation", seed=7)


RETRACT_COLUMNS = [["id", "BIGINT"], ["a", "BIGINT"], ["b", "DOUBLE"], ["j", "DOUBLE"], ["k", "DOUBLE"],
                   ["d", "BIGINT"]]


def test_aggregation_retractions_full_compaction(warehouse):
    options = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
               "fields.b.aggregate-function": "sum", "fields.j.aggregate-function": "last_value",
               "fields.d.aggregate-function": "max", "fields.d.ignore-retract": "true"}  # k: last_non_null_value
    check_full_with_retractions(warehouse, RETRACT_COLUMNS, options, "aggregation", seed=9)


def test_aggregation_refuses_a_retraction_its_function_cannot_take(warehouse):
    options = {"merge-engine": "aggregation", "fields.d.aggregate-function": "max"}
    data, kinds = retraction_table(warehouse, RETRACT_COLUMNS, options, seed=9)
    with pytest.raises(PaimonJobError, match="table db.t: field 'd' aggregates with 'max', which Paimon cannot "
                                             "retract.*fields.d.ignore-retract"):
        compact(reload(warehouse), full=True, scope="table")
    assert latest_snapshot(reload(warehouse)).commit_kind != "COMPACT"


def test_float_sum_adds_in_merge_order_like_paimon():
    kv = pa.table({"_KEY_id": pa.array([1, 1, 1], pa.int64()), "_SEQUENCE_NUMBER": pa.array([0, 1, 2], pa.int64()),
                   "_VALUE_KIND": pa.array([0, 0, 0], pa.int8()), "id": pa.array([1, 1, 1], pa.int64()),
                   "x": pa.array([1e16, 1.0, -1e16])})
    options = TableOptions.parse("db.t", {"merge-engine": "aggregation", "fields.x.aggregate-function": "sum"})
    merged = merge_key_values(kv, ["_KEY_id"], options, True)
    assert merged.column("x").to_pylist() == [(1e16 + 1.0) - 1e16]  # 0.0; a reordered sum would give 1.0
    assert merged.column("_SEQUENCE_NUMBER").to_pylist() == [2]


# ---------------------------------------------------------------- refused up front

@pytest.mark.parametrize("engine, option, value, message", [
    ("aggregation", "fields.v.aggregate-function", "count", "Paimon removed 'count'"),
    ("aggregation", "fields.v.aggregate-function", "sumx", "unknown aggregate function"),
    ("aggregation", "fields.default-aggregate-function", "listagg", "does not implement it"),
    ("aggregation", "aggregation.remove-record-on-delete", "true", "aggregation.remove-record-on-delete"),
    ("aggregation", "fields.s.sequence-group", "v", "fields.s.sequence-group"),
    ("partial-update", "fields.s.sequence-group", "v", "fields.s.sequence-group"),
    ("partial-update", "fields.v.aggregate-function", "sum", "fields.v.aggregate-function"),
    ("partial-update", "partial-update.remove-record-on-sequence-group", "s", "remove-record-on-sequence-group"),
])
def test_unsupported_options_are_refused_before_anything_is_written(warehouse, engine, option, value, message):
    # created by another engine: the partial-update ones are refused already when declared (test_table_options.py)
    table, schema = make_table(warehouse, PU_COLUMNS, {"merge-engine": engine, option: value}, by_pypaimon=True)
    data = random_batches(PU_COLUMNS, 2, seed=1)
    for i, df in enumerate(data):
        engine_write(reload(warehouse), df, schema, np.zeros(len(df), np.int8), i)
    files = {e.file.file_name for es in bucket_files(reload(warehouse)).values() for e in es}
    with pytest.raises(ValidationError, match=f"table db.t, option '{option}', value '{value}': ") as err:
        compact(reload(warehouse), full=True, scope="table")
    assert message in str(err.value)
    table = reload(warehouse)
    assert latest_snapshot(table).id == 2
    assert {e.file.file_name for es in bucket_files(table).values() for e in es} == files
