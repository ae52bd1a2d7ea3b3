"""``changelog-producer=lookup`` without deletion vectors, as Paimon's ForceUpLevel0Compaction: each write commits its
records at level 0 (APPEND), then a COMPACT snapshot of the same commit identity lifts them out — one level below
the lowest run, or merged into level 1 — and registers the lookup changelog of the written keys (old merged value
against new). Replaying each write's changelog on the table before it gives the table after it (pandas), for every
bucket mode, through inserts, updates, moves, deletes and in-batch duplicates; no level 0 is left behind. Java Paimon
reads the same changelog (tests/java)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.read.incremental import scan_mode_of
from airflow_paimon.engine.files.scan import live_entries
from airflow_paimon.engine.table.table import get_table
from changelog_tables import KINDS, SPECS, changelog_of, replay, soak, with_options, write_all
from local_runner import compact
from incremental_oracle import read_at
from local_runner import bootstrap, stage_run
from oracle import assert_table_equals, expected_upsert, read_table

LOOKUP = {"changelog-producer": "lookup", "num-levels": "4"}  # few levels: level 1 is merged into by the fourth write
IDENTITY = ["dt", "id"]


def normal(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["id", "dt", "v"]].sort_values(IDENTITY).reset_index(drop=True)


@pytest.mark.parametrize("shape", list(SPECS))
@pytest.mark.slow
def test_each_write_replays_to_the_table_after_it(warehouse, shape):
    spec = with_options(SPECS[shape], LOOKUP)
    batches = soak(seed=29, n_batches=6)
    snapshots = write_all(warehouse, spec, batches)
    table = get_table({"warehouse": warehouse}, "db.t")
    manager = table.snapshot_manager()
    state, previous, kinds, merged_into_level_1 = pd.DataFrame(columns=["id", "dt", "v"]), 0, set(), False
    for sid in snapshots:
        append, compact_half = manager.get_snapshot_by_id(sid - 1), manager.get_snapshot_by_id(sid)
        assert (append.commit_kind, compact_half.commit_kind) == ("APPEND", "COMPACT")
        assert append.changelog_manifest_list is None and compact_half.changelog_manifest_list
        files = live_entries(table, compact_half)
        assert all(e.file.level > 0 for e in files)  # level 0 lifted out by every write
        merged_into_level_1 |= sum(e.file.level == 1 for e in files) > 0 and previous > 0
        changes = changelog_of(table, previous, sid)
        assert not changes.duplicated(IDENTITY + ["row_kind"]).any()
        befores = changes[changes.row_kind == "-U"].set_index(IDENTITY).index
        assert befores.equals(changes[changes.row_kind == "+U"].set_index(IDENTITY).index)  # in pairs
        old, new = read_at(table, previous).set_index(IDENTITY), read_at(table, sid).set_index(IDENTITY)
        for kind, against in (("-U", old), ("-D", old), ("+U", new), ("+I", new)):  # exact images
            rows = changes[changes.row_kind == kind].set_index(IDENTITY)
            assert rows.index.isin(against.index).all(), kind
            assert (rows.v.to_numpy() == against.loc[rows.index, "v"].to_numpy()).all(), kind
        state, previous, kinds = replay(state, changes), sid, kinds | set(changes.row_kind)
        pd.testing.assert_frame_equal(normal(state), normal(read_at(table, sid)), check_dtype=False)
    assert kinds == {"+I", "-U", "+U", "-D"} and merged_into_level_1
    frames = [f.assign(row_kind=KINDS[k]) for f, k in batches]
    if shape == "cross-partition":  # pypaimon's full read is the oracle's table
        assert_table_equals(table, expected_upsert(frames, "id", row_kind="row_kind"), "id")
    else:
        keyed = [f.assign(k=f.dt + ":" + f.id.astype(str)) for f in frames]
        actual = read_table(table)
        assert not actual.duplicated(IDENTITY).any()
        pd.testing.assert_frame_equal(normal(actual), normal(expected_upsert(keyed, "k", row_kind="row_kind")),
                                      check_dtype=False)
    assert scan_mode_of(table, "db.t", "auto") == "changelog"


def test_aggregation_changelog_carries_the_old_and_new_aggregate(warehouse):
    """The old value is the merge of every version the levels hold (partial aggregates included), the new one that
    merged with the batch's records."""
    spec = with_options(SPECS["fixed-bucket"], {**LOOKUP, "merge-engine": "aggregation",
                                                "fields.v.aggregate-function": "sum"})
    frames = [pd.DataFrame({"id": [1, 2, 2, 3], "dt": ["a"] * 4, "v": [1.0, 2.0, 3.0, 4.0]}),
              pd.DataFrame({"id": [1, 1, 4], "dt": ["a"] * 3, "v": [10.0, 20.0, 5.0]})]
    first, second = write_all(warehouse, spec, [(f, np.zeros(len(f), np.int8)) for f in frames])
    table = get_table({"warehouse": warehouse}, "db.t")
    assert sorted(zip(*[changelog_of(table, 0, first)[c] for c in ("row_kind", "id", "v")])) == [
        ("+I", 1, 1.0), ("+I", 2, 5.0), ("+I", 3, 4.0)]
    assert sorted(zip(*[changelog_of(table, first, second)[c] for c in ("row_kind", "id", "v")])) == [
        ("+I", 4, 5.0), ("+U", 1, 31.0), ("-U", 1, 1.0)]


def test_a_retry_between_append_and_compact_finishes_it_and_a_snapshot_in_between_is_refused(warehouse, monkeypatch):
    from airflow_paimon.engine.commit import committer
    from airflow_paimon.engine.runs.commit import run_commit

    spec = with_options(SPECS["fixed-bucket"], LOOKUP)
    opts = {"warehouse": warehouse}
    (first, k1), (second, k2), (third, k3) = soak(seed=3, n_batches=3)
    write_all(warehouse, spec, [(first, k1)])

    def staged(frame, kinds, run_id):
        return stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2),
                         pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), run_id,
                         row_kinds=kinds)

    class Stopped(Exception):
        pass

    def stop(name):
        if name == "commit.between_append_and_compact":
            raise Stopped(name)

    commit_spec = staged(second, k2, "r1")
    monkeypatch.setattr(committer, "crash_point", stop)
    with pytest.raises(Stopped):
        run_commit(commit_spec)
    monkeypatch.undo()
    assert get_table(opts, "db.t").snapshot_manager().get_latest_snapshot().commit_kind == "APPEND"
    result = run_commit(commit_spec)  # the retry lands the COMPACT with its changelog
    table = get_table(opts, "db.t")
    assert result.commit_kind == "COMPACT" and changelog_of(table, result.snapshot_id - 1, result.snapshot_id).size
    assert all(e.file.level > 0 for e in live_entries(table, table.snapshot_manager().get_latest_snapshot()))

    late = staged(third, k3, "r2")  # planned against the base, then a compaction lands first
    compact(get_table(opts, "db.t"), run_id="c", full=True, scope="table")
    with pytest.raises(StaleIndexError):
        run_commit(late)


def test_first_row_emits_only_new_keys(warehouse):
    """Paimon's first-row changelog: +I for a key the table did not hold, nothing for a key it keeps."""
    spec = with_options(SPECS["fixed-bucket"], {**LOOKUP, "merge-engine": "first-row"})
    frames = [pd.DataFrame({"id": [1, 2], "dt": ["a", "a"], "v": [1.0, 2.0]}),
              pd.DataFrame({"id": [2, 3], "dt": ["a", "a"], "v": [9.0, 3.0]})]
    first, second = write_all(warehouse, spec, [(f, np.zeros(2, np.int8)) for f in frames])
    table = get_table({"warehouse": warehouse}, "db.t")
    changes = changelog_of(table, first, second)
    assert list(zip(changes.row_kind, changes.id, changes.v)) == [("+I", 3, 3.0)]
    assert sorted(read_at(table, second).v) == [1.0, 2.0, 3.0]
