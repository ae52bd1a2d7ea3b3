"""Compaction in-process: Paimon's universal picks, full compaction of every table shape read back with
pypaimon and pypaimon-rust against a pandas oracle, re-levelling, conflicts and retries."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_paimon.engine.compact import rewrite
from airflow_paimon.engine.compact.commit import CompactConflictError
from airflow_paimon.engine.compact.levels import LevelSortedRun, interval_partition
from airflow_paimon.engine.runs.compact import compact_task, compaction_identity, run_compaction
from airflow_paimon.engine.compact.strategy import UniversalCompaction, create_unit
from airflow_paimon.engine.options import CompactOptions, TableOptions
from airflow_paimon.engine.errors import PaimonJobError
from airflow_paimon.engine.files.scan import file_path, latest_snapshot
from airflow_paimon.engine.assign.shapes import shape_of
from airflow_paimon.engine.files.data_files import read_columns
from airflow_paimon.engine.table.table import get_table
from compaction_tables import assert_reads, batches, bucket_files, cross_partition_table, pypaimon_written_table
from local_runner import compact
from oracle import expected_upsert, read_table


# --- planning: the picks of Paimon's UniversalCompaction -------------------------------------------------

def runs(*level_sizes) -> list[LevelSortedRun]:
    return [LevelSortedRun(level, (SimpleNamespace(file_size=size),)) for level, size in level_sizes]


def test_output_level_is_one_above_the_next_run_and_never_zero():
    levels = runs((0, 1), (0, 1), (1, 1), (3, 1), (4, 1))
    assert [create_unit(levels, 5, n).output_level for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 3, 5]
    assert len(create_unit(levels, 5, 1).runs) == 3  # level-0 runs are pulled in until a level >0 is met


def test_size_amplification_compacts_everything_to_the_max_level():
    strategy = UniversalCompaction(CompactOptions(num_sorted_run_compaction_trigger=3,
                                                  max_size_amplification_percent=200))
    assert strategy.pick(6, runs((0, 1), (0, 1), (5, 1))).output_level == 5  # 200 % extra: not > 200 yet...
    assert len(strategy.pick_for_size_amp(5, runs((0, 2), (0, 1), (5, 1))).runs) == 3  # ...300 % is
    assert strategy.pick_for_size_amp(5, runs((0, 1), (0, 1), (5, 100))) is None  # 2 %
    unit = strategy.pick(6, runs((0, 1), (0, 1), (5, 100)))  # size ratio then takes the two small runs only
    assert (len(unit.runs), unit.output_level) == (2, 4)


def test_size_ratio_takes_similar_runs_and_stops_before_a_large_one():
    unit = UniversalCompaction(CompactOptions()).pick(6, runs((0, 1), (0, 1), (0, 1), (0, 1), (5, 50)))
    assert (len(unit.runs), unit.output_level) == (4, 4)


def test_run_count_forces_a_pick_that_then_absorbs_small_level0_runs():
    sizes = [(0, 1), (0, 10), (0, 100), (0, 1000), (0, 10000), (0, 100000), (5, 1000000)]
    strategy = UniversalCompaction(CompactOptions())
    assert strategy.pick_for_size_amp(5, runs(*sizes)) is None
    assert strategy.pick_for_size_ratio(5, runs(*sizes)) is None
    unit = strategy.pick(6, runs(*sizes))  # 7 runs > trigger 5: start with 3, keep taking level-0 runs
    assert (len(unit.runs), unit.output_level) == (6, 4)


def test_below_the_trigger_nothing_is_picked():
    assert UniversalCompaction(CompactOptions()).pick(6, runs((0, 1), (0, 1), (0, 1), (0, 1))) is None


def test_options_come_from_paimon_keys():
    o = TableOptions.parse("db.t", {"num-sorted-run.compaction-trigger": "3", "compaction.size-ratio": "10",
                                    "compaction.max-size-amplification-percent": "50"}).compaction
    assert (o.num_sorted_run_compaction_trigger, o.size_ratio, o.max_size_amplification_percent, o.levels) == \
        (3, 10, 50, 4)


def assert_one_run_at_max_level(table, max_level=5):
    for where, entries in bucket_files(table).items():
        assert {e.file.level for e in entries} == {max_level}, where
        assert all(len(s) == 1 for s in interval_partition([e.file for e in entries])), f"{where} overlaps"
        for e in entries:
            kinds = read_columns(file_path(table, e), ["_VALUE_KIND"]).column("_VALUE_KIND")
            assert pc.sum(pc.is_in(kinds, pa.array([1, 3], pa.int8())).cast(pa.int64())).as_py() in (0, None)


@pytest.mark.parametrize("shape", ["cross-partition", "dynamic-bucket", "fixed-bucket"])
@pytest.mark.slow
def test_full_compaction_leaves_one_sorted_run_at_max_level_and_the_same_rows(warehouse, shape):
    data = batches(6)
    if shape == "cross-partition":
        table, expected = cross_partition_table(warehouse, data)
        keys = ["id"]
    else:
        bucket = {"dynamic-bucket": {"bucket": "-1", "dynamic-bucket.target-row-num": "40"},
                  "fixed-bucket": {"bucket": "3"}}[shape]
        table, expected = pypaimon_written_table(warehouse, data, bucket)
        keys = ["id", "dt"]
    assert shape_of(table).label == shape
    assert_reads(table, warehouse, expected, keys)
    files_before = sum(len(es) for es in bucket_files(table).values())
    before_id = latest_snapshot(table).id

    result = compact(table, full=True, scope="table")

    table = get_table({"warehouse": warehouse}, "db.t")
    snap = latest_snapshot(table)
    assert result["snapshot_id"] == snap.id == before_id + 1 and snap.commit_kind == "COMPACT"
    assert result["files_before"] == files_before and result["compacted_buckets"] == len(bucket_files(table))
    assert_one_run_at_max_level(table)
    assert_reads(table, warehouse, expected, keys)
    # and the table goes on: a second full compaction finds nothing to do
    assert compact(table, run_id="again", full=True, scope="table")["snapshot_id"] == snap.id


def test_universal_compaction_bounds_sorted_runs_and_keeps_rows(warehouse):
    table, expected = cross_partition_table(warehouse, batches(8, seed=5))
    most_runs = max(len(es) for es in bucket_files(table).values())
    assert most_runs > 5  # without compaction the runs pile up
    result = compact(table, scope="table")
    table = get_table({"warehouse": warehouse}, "db.t")
    assert result["compacted_buckets"] > 0 and latest_snapshot(table).commit_kind == "COMPACT"
    for where, es in bucket_files(table).items():
        levels = [e.file.level for e in es]
        assert levels.count(0) + len({lv for lv in levels if lv > 0}) <= 5, where
    assert_reads(table, warehouse, expected, ["id"])


def test_snapshot_scope_only_touches_buckets_written_since_last_compaction(warehouse):
    data = batches(3)
    table, _ = cross_partition_table(warehouse, data)
    compact(table, run_id="first", full=True, scope="table")
    last = pd.DataFrame({"id": [10_000], "dt": ["a"], "v": [1.0]})
    table, expected = cross_partition_table(warehouse, [last])  # one new key: one bucket of partition a
    touched = {k for k, es in bucket_files(table).items() if any(e.file.level == 0 for e in es)}
    result = compact(table, run_id="scoped", full=True)
    assert result["compacted_buckets"] == len(touched) == 1
    assert_reads(get_table({"warehouse": warehouse}, "db.t"), warehouse, expected_upsert(data + [last], "id"), ["id"])


def test_large_file_overlapping_nothing_is_relevelled_not_rewritten(warehouse, monkeypatch):
    monkeypatch.setattr(rewrite, "min_file_size", lambda table: 0)  # every file counts as large
    first = pd.DataFrame({"id": np.arange(0, 100), "dt": "a", "v": 1.0})
    second = pd.DataFrame({"id": np.arange(100, 200), "dt": "a", "v": 2.0})  # same bucket, no key overlap
    table, expected = pypaimon_written_table(warehouse, [first, second], {"bucket": "1"})
    names = {e.file.file_name for es in bucket_files(table).values() for e in es}
    result = compact(table, full=True, scope="table")
    table = get_table({"warehouse": warehouse}, "db.t")
    after = [e.file for es in bucket_files(table).values() for e in es]
    assert {f.file_name for f in after} == names and {f.level for f in after} == {5}
    assert (result["files_before"], result["files_after"]) == (2, 2)
    assert_reads(table, warehouse, expected, ["id", "dt"])


def test_retractions_are_dropped_at_max_level_even_from_relevelled_files(warehouse, monkeypatch):
    monkeypatch.setattr(rewrite, "min_file_size", lambda table: 0)
    moves = pd.DataFrame({"id": [1, 2, 3], "dt": ["b", "b", "c"], "v": [9.0, 9.0, 9.0]})
    data = [pd.DataFrame({"id": [1, 2, 3, 4], "dt": ["a"] * 4, "v": [1.0, 2.0, 3.0, 4.0]}), moves]
    table, expected = cross_partition_table(warehouse, data)  # the move leaves DELETE rows in partition a
    compact(table, full=True, scope="table")
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_one_run_at_max_level(table)
    assert_reads(table, warehouse, expected, ["id"])


def test_first_row_merge_engine_keeps_the_first_version(warehouse):
    data = batches(4, rows=100, keys=150)
    table, _ = pypaimon_written_table(warehouse, data, {"bucket": "2", "merge-engine": "first-row"})
    expected = pd.concat(data).drop_duplicates(["id", "dt"], keep="first").sort_values(["id", "dt"])
    # A first-row table's batch read skips level 0 (as in Paimon): nothing is visible until compaction.
    assert len(read_table(table)) == 0
    compact(table, full=True, scope="table")
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_one_run_at_max_level(table)
    assert_reads(table, warehouse, expected.reset_index(drop=True), ["id", "dt"])


def test_unsupported_merge_engine_option_is_refused():
    # end to end (nothing written, nothing committed): tests/unit/compact/test_compaction_engines.py
    from airflow_paimon.engine.options.checks import TableColumns, check_options
    shape = TableColumns({"id": "BIGINT", "v": "DOUBLE", "dt": "STRING"}, ("id",), ())
    with pytest.raises(PaimonJobError, match="option 'fields.v.sequence-group', value 'dt': merge-engine "
                                             "partial-update with sequence groups"):
        check_options("db.t", {"merge-engine": "partial-update", "fields.v.sequence-group": "dt"}, shape)
    with pytest.raises(PaimonJobError, match="option 'merge-engine', value 'lookup': is not supported"):
        check_options("db.t", {"merge-engine": "lookup"}, shape)


def test_retry_of_the_same_run_returns_the_same_snapshot(warehouse):
    table, _ = cross_partition_table(warehouse, batches(3))
    first = compact(table, run_id="same", full=True, scope="table")
    again = compact(get_table({"warehouse": warehouse}, "db.t"), run_id="same", snapshot_id=3, full=True,
                    scope="table")
    assert again == {**first, "already_committed": True}
    assert len(get_table({"warehouse": warehouse}, "db.t").snapshot_manager().list_snapshots()) == 4


def test_conflicting_concurrent_commit_fails_cleanly_and_a_rerun_succeeds(warehouse):
    table, expected = cross_partition_table(warehouse, batches(3))
    data_dir_files = lambda: {p for p in _data_files(warehouse)}  # noqa: E731
    before_files = data_dir_files()
    written = []

    def execute_with_a_concurrent_compaction(work):
        messages = [compact_task(table, w) for w in work]
        written.extend(messages)
        compact(get_table({"warehouse": warehouse}, "db.t"), run_id="other", full=True, scope="table")
        return messages

    with pytest.raises(CompactConflictError, match="removed input file .* nothing committed, re-run"):
        run_compaction(table, compaction_identity("dag", "mine", "db.t"), 3, full=True, scope="table",
                       execute=execute_with_a_concurrent_compaction)
    table = get_table({"warehouse": warehouse}, "db.t")
    snaps = table.snapshot_manager().list_snapshots()
    assert [s.commit_user for s in snaps][-1] == compaction_identity("dag", "other", "db.t").commit_user
    assert len(snaps) == 4  # only the other compaction committed
    other_outputs = {p for p in data_dir_files() - before_files}
    assert len(other_outputs) == sum(len(es) for es in bucket_files(table).values())  # our outputs are gone
    assert_reads(table, warehouse, expected, ["id"])
    # a re-run plans again at the new state: nothing left to compact
    rerun = compact(table, run_id="mine", snapshot_id=3, full=True, scope="table")
    assert (rerun["snapshot_id"], rerun["compacted_buckets"]) == (3, 0)  # the input id: nothing was due


def _data_files(warehouse):
    import glob
    return glob.glob(f"{warehouse}/db.db/t/dt=*/bucket-*/*.parquet")


def test_partition_filter_limits_the_compaction(warehouse):
    table, expected = cross_partition_table(warehouse, batches(3))
    with pytest.raises(PaimonJobError, match="column 'day'"):
        compact(table, full=True, scope="table", partition_filter={"day": "a"})
    result = compact(table, full=True, scope="table", partition_filter={"dt": "a"})
    table = get_table({"warehouse": warehouse}, "db.t")
    levels = {where: {e.file.level for e in es} for where, es in bucket_files(table).items()}
    assert result["compacted_buckets"] == sum(1 for (p, _) in levels if p == ("a",))
    assert all(lv == ({5} if p == ("a",) else {0}) for (p, _), lv in levels.items())
    assert_reads(table, warehouse, expected, ["id"])


def test_writes_since_compaction_counts_back_to_the_last_compact_snapshot(warehouse):
    from airflow_paimon.engine.compact.plan import writes_since_compaction
    table, _ = cross_partition_table(warehouse, batches(2))
    assert [s.id for s in writes_since_compaction(table, 2)] == [2, 1]
    compact(table, full=True, scope="table")  # snapshot 3
    table, _ = cross_partition_table(warehouse, batches(2, seed=8))  # snapshots 4, 5
    assert [s.id for s in writes_since_compaction(table, 5)] == [5, 4]
    assert writes_since_compaction(table, None) == []


def test_compacts_files_in_paimons_thin_layout_from_pypaimon_rust(warehouse):
    """pypaimon-rust writes no _KEY_ columns (thin mode): the keys are read from the value columns."""
    from compaction_tables import pypaimon_written_table

    table, expected = pypaimon_written_table(warehouse, batches(3), {"bucket": "-1", "write.native.enabled": "true"},
                                             primary_keys=["id"])
    any_file = next(iter(bucket_files(table).values()))[0]
    assert "_KEY_id" not in pq.ParquetFile(file_path(table, any_file)).schema_arrow.names
    compact(table, full=True, scope="table")
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_one_run_at_max_level(table)
    assert_reads(table, warehouse, expected, ["id"])
