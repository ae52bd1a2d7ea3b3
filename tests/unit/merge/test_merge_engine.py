"""The merge engine's rules, read once (engine/merge/merge_engine.py): options resolved as Paimon's CoreOptions
resolves them, and the steps that merge — assign, write, compaction — agreeing on a real table."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.merge.rowkind import resolve_duplicates
from airflow_paimon.engine.codec.kinds import DELETE, INSERT
from airflow_paimon.engine.errors import PaimonJobError, ValidationError
from airflow_paimon.engine.merge.merge_engine import ExistingProcessor, MergeEngine, MergeRules
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, compact, upsert
from oracle import read_table


@pytest.mark.parametrize("options,expected", [
    ({}, False),
    ({"ignore-delete": "true"}, True),
    ({"first-row.ignore-delete": "true"}, True),
    ({"deduplicate.ignore-delete": "TRUE"}, True),
    ({"partial-update.ignore-delete": "true"}, True),
    # Paimon's fallback keys apply only when the key itself is absent
    ({"ignore-delete": "false", "first-row.ignore-delete": "true"}, False),
    ({"first-row.ignore-delete": "false", "partial-update.ignore-delete": "true"}, False),
])
def test_ignore_delete_resolves_paimons_fallback_keys(options, expected):
    assert MergeRules.of(options).ignore_delete is expected


def test_each_engine_has_paimons_existing_processor():
    assert {e: MergeRules.of({"merge-engine": e.value}).existing for e in MergeEngine} == {
        MergeEngine.DEDUPLICATE: ExistingProcessor.DELETE_EXISTING,
        MergeEngine.PARTIAL_UPDATE: ExistingProcessor.USE_OLD,
        MergeEngine.AGGREGATE: ExistingProcessor.USE_OLD, MergeEngine.FIRST_ROW: ExistingProcessor.SKIP_NEW}
    same = np.array([True, False])
    moves, takes = ExistingProcessor.DELETE_EXISTING.process_exists(same)
    assert moves.tolist() == [False, True] and takes.tolist() == [True, True]
    moves, takes = ExistingProcessor.USE_OLD.process_exists(same)
    assert moves.tolist() == [False, False] and takes.tolist() == [True, True]
    moves, takes = ExistingProcessor.SKIP_NEW.process_exists(same)
    assert moves.tolist() == [False, False] and takes.tolist() == [False, False]


def test_retraction_rules_per_engine():
    refuses = {name: MergeRules.of({"merge-engine": name, **extra}).refuses_retractions for name, extra in [
        ("deduplicate", {}), ("aggregation", {}), ("first-row", {}), ("partial-update", {})]}
    assert refuses == {"deduplicate": False, "aggregation": False, "first-row": True, "partial-update": True}
    assert not MergeRules.of({"merge-engine": "partial-update",
                              "partial-update.remove-record-on-delete": "true"}).refuses_retractions
    assert not MergeRules.of({"merge-engine": "first-row", "first-row.ignore-delete": "true"}).refuses_retractions


def test_bad_options_name_table_and_value():
    with pytest.raises(PaimonJobError, match="table db.t: merge-engine 'lookup' is not supported"):
        MergeRules.of({"merge-engine": "lookup"}, "db.t")
    with pytest.raises(PaimonJobError, match="table db.t: sequence.field.sort-order 'sideways' is not supported"):
        MergeRules.of({"sequence.field": "s", "sequence.field.sort-order": "sideways"}, "db.t")


def test_in_batch_merge_of_first_row_drops_deletes_under_the_fallback_key():
    """The fixed- and dynamic-bucket write task's merge: -D/-U are dropped before the first row is picked."""
    rows = pa.table({"k": [1, 1, 2, 3], "v": [1.0, 2.0, 3.0, 4.0]})
    kinds = np.array([DELETE, INSERT, INSERT, 1], np.int8)
    with pytest.raises(ValidationError, match="first-row cannot accept -U/-D records"):
        resolve_duplicates(rows, kinds, ["k"], MergeRules.of({"merge-engine": "first-row"}))
    got = resolve_duplicates(rows, kinds, ["k"], MergeRules.of({"merge-engine": "first-row",
                                                                 "first-row.ignore-delete": "true"}))
    assert got.rows.to_pydict() == {"k": [1, 2], "v": [2.0, 3.0]} and got.row_kinds.tolist() == [INSERT, INSERT]


SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"]}


def test_first_row_with_first_row_ignore_delete_assign_write_and_compaction_agree(warehouse):
    """A cross-partition first-row table with ``first-row.ignore-delete`` (a fallback key of Paimon's
    ``ignore-delete``): assign-and-write ignores -D rows, as Paimon's writer and this compaction do; before,
    assign-and-write refused them while compaction ignored them."""
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**SPEC, "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                                    "merge-engine": "first-row", "first-row.ignore-delete": "true"}})
    get_or_create_table(opts, "db.t", spec)
    schema = spec.arrow_schema()
    first = pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2.0, 3.0, 4.0]})
    # deletes of known keys (1, 3), of an unknown key (9), a newer row of a known key (2, other partition),
    # a new key (5) and a delete of it in the same batch
    second = pd.DataFrame({"id": [1, 3, 9, 2, 5, 5], "dt": list("abacaa"), "v": [0.0, 0.0, 0.0, 20.0, 5.0, 0.0]})
    kinds = [np.zeros(4, np.int8), np.array([DELETE, DELETE, DELETE, INSERT, INSERT, DELETE], np.int8)]
    for i, (df, ks) in enumerate(zip([first, second], kinds)):
        ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
        upsert(ctx, pa.Table.from_pandas(df, schema=schema, preserve_index=False), run_id=f"r{i}", row_kinds=ks)
    table = get_table(opts, "db.t")
    assert sum(f.delete_row_count or 0 for f in _data_files(table)) == 0  # no -D reached a data file

    compact(table, full=True, scope="table")  # first-row reads skip level 0: compaction makes the rows visible
    table = get_table(opts, "db.t")
    actual = read_table(table)[["id", "dt", "v"]].sort_values("id").reset_index(drop=True)
    expected = pd.DataFrame({"id": [1, 2, 3, 4, 5], "dt": list("aabba"), "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    assert not actual["id"].duplicated().any()
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)


def _data_files(table):
    from airflow_paimon.engine.files.scan import latest_snapshot, live_entries
    return [e.file for e in live_entries(table, latest_snapshot(table))]


def test_aggregation_with_ignore_delete_writes_no_retraction():
    """Paimon's RowKindFilter runs before every merge engine: under aggregation the -U/-D rows are dropped, not
    handed to the aggregate functions."""
    from airflow_paimon.engine.assign.assigner import KEY, ROW_KIND, ORDER, assign_shard
    from airflow_paimon.engine.index.buckets import BucketAssigner
    from airflow_paimon.engine.codec.keys import encode_keys
    from airflow_paimon.engine.index.shard import ShardIndex

    batch = pa.table({"id": pa.array([1, 1, 2], pa.int64()), "dt": ["a", "a", "a"], "v": [1.0, 5.0, 2.0]})
    batch = batch.append_column(KEY, encode_keys(batch, ["id"])).append_column(ORDER, pa.array([0, 1, 2], pa.int64()))
    batch = batch.append_column(ROW_KIND, pa.array([INSERT, DELETE, 1], pa.int8()))
    for options, expected in [({}, [(1, 1.0, INSERT), (1, 5.0, DELETE), (2, 2.0, 1)]),
                              ({"ignore-delete": "true"}, [(1, 1.0, INSERT)])]:
        with ShardIndex() as index:
            out = assign_shard(batch, partition_fields=["dt"], partition_types=[pa.string()], index=index,
                               buckets=BucketAssigner(0, 1, 10), rules=MergeRules.of({"merge-engine": "aggregation",
                                                                                        **options}))
        assert sorted((r["id"], r["v"], r[ROW_KIND]) for r in out.rows.to_pylist()) == expected


def test_a_malformed_fallback_key_is_named():
    with pytest.raises(PaimonJobError, match="table db.t: first-row.ignore-delete 'maybe' is not supported"):
        MergeRules.of({"merge-engine": "first-row", "first-row.ignore-delete": "maybe"}, "db.t")


@pytest.mark.parametrize("options", [{}, {"changelog-producer": "lookup"}], ids=["compaction", "lookup"])
def test_aggregation_retraction_keeps_a_partition_field_of_the_primary_key(warehouse, options):
    """Paimon's primary_key function keeps every primary-key field, a partition field among them: a -D under
    aggregation subtracts from the sum and leaves dt alone (as last_non_null_value it would be cleared)."""
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                                "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                                "options": {"bucket": "1", "merge-engine": "aggregation",
                                            "fields.v.aggregate-function": "sum", **options}})
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    for i, (v, kind) in enumerate([(5.0, INSERT), (2.0, DELETE)]):
        rows = pa.table({"id": pa.array([1], pa.int64()), "dt": ["a"], "v": [v]}).cast(spec.arrow_schema())
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), rows, f"r{i}", row_kinds=np.array([kind], np.int8))
    compact(get_table(opts, "db.t"), full=True, scope="table")
    assert read_table(get_table(opts, "db.t")).to_dict("records") == [{"id": 1, "dt": "a", "v": 3.0}]
