"""Deletion-vector tables (``deletion-vectors.enabled=true``): after every run each row it wrote is visible to
readers that skip level 0 and apply deletion vectors (pypaimon; Java Paimon in tests/java) — no key twice, the
pandas oracle's table — through updates, moves, deletes and in-batch duplicates, across enough runs to fill every
level and rewrite buckets."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import StaleIndexError, ValidationError
from airflow_paimon.engine.maintenance.references import SnapshotReader
from airflow_paimon.engine.files.scan import live_entries
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from deletion_vector_tables import CROSS, FIXED, KINDS, runs, write
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_upsert, read_table

@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
@pytest.mark.slow
def test_every_run_is_visible_and_right(warehouse, spec):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    done, rewritten, vectors = [], 0, 0
    for i, (frame, kinds) in enumerate(runs(seed=21)):
        sid, _ = write(warehouse, spec, frame, kinds, f"r{i}")
        done.append(frame.assign(row_kind=KINDS[kinds]))
        table = get_table(opts, "db.t")
        if spec is CROSS:
            expected = expected_upsert(done, "id", row_kind="row_kind")
            assert_table_equals(table, expected, "id")
        else:
            expected = expected_upsert([d.assign(k=d.dt + ":" + d.id.astype(str)) for d in done], "k",
                                       row_kind="row_kind")
            _assert_fixed(table, expected.drop(columns="k"))
        files = live_entries(table, table.snapshot_manager().get_snapshot_by_id(sid))
        assert files and all(e.file.level > 0 for e in files)  # level 0 is invisible in this mode
        assert all((e.file.delete_row_count or 0) == 0 for e in files)  # deletes are vectors, not rows
        delta = SnapshotReader(table).delta_entries(table.snapshot_manager().get_snapshot_by_id(sid))
        rewritten += any(e.kind == 1 and e.file.level == 1 for e in delta)  # level 1 taken: merged into level 1
        vectors += bool(_deletion_vectors(table, sid))
    assert rewritten and vectors >= 3  # level 1 merged into, and vectors written, in several runs


def _deletion_vectors(table, snapshot_id) -> dict:
    """Data file name -> how many rows its deletion vector marks, at ``snapshot_id``."""
    from pypaimon.manifest.index_manifest_file import IndexManifestFile

    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    if not snapshot.index_manifest:
        return {}
    return {name: meta.cardinality for e in IndexManifestFile(table).read(snapshot.index_manifest)
            if e.index_file.index_type == "DELETION_VECTORS" for name, meta in (e.index_file.dv_ranges or {}).items()}


def _assert_fixed(table, expected):
    actual = read_table(table)
    assert not actual.duplicated(["dt", "id"]).any()
    order = ["dt", "id"]
    pd.testing.assert_frame_equal(actual[list(expected.columns)].sort_values(order).reset_index(drop=True),
                                  expected.sort_values(order).reset_index(drop=True), check_dtype=False)


def test_first_row_keeps_the_first_row(warehouse):
    """Paimon refuses deletion vectors under first-row (it deletes no old rows); its writes lift level 0 all the
    same (readers skip level 0 there too), and the first row of each key stays."""
    options = {**FIXED.to_dict()["options"], "merge-engine": "first-row"}
    opts = {"warehouse": warehouse}
    with pytest.raises(ValidationError, match="cannot be used with merge-engine first-row"):
        get_or_create_table(opts, "db.t", TableSpec.from_dict({**FIXED.to_dict(), "options": options}))
    spec = TableSpec.from_dict({**FIXED.to_dict(), "options": {k: v for k, v in options.items()
                                                               if k != "deletion-vectors.enabled"}})
    get_or_create_table(opts, "db.t", spec)
    frames = [frame for frame, _ in runs(seed=4, n=4)]
    for i, frame in enumerate(frames):
        write(warehouse, spec, frame, None, f"r{i}")
    expected = pd.concat(frames).drop_duplicates(["dt", "id"], keep="first")
    _assert_fixed(get_table(opts, "db.t"), expected)


def test_a_snapshot_in_between_is_refused_even_a_compaction(warehouse):
    """Row positions marked against the base snapshot are wrong once anything rewrote the bucket."""
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", FIXED)
    first, second = list(runs(seed=8, n=2))
    write(warehouse, FIXED, *first, "r0")
    ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    spec = stage_run(ctx, pa.Table.from_pandas(second[0], schema=FIXED.arrow_schema(), preserve_index=False), "r1")
    write(warehouse, FIXED, *second, "other")  # another writer's snapshot lands first
    from airflow_paimon.engine.runs.commit import run_commit

    with pytest.raises(StaleIndexError):
        run_commit(spec)


def _merged_runs(spec_options: dict, seed: int, n: int = 6):
    """A fixed-bucket deletion-vector table with ``spec_options``, written n times with values that are often
    null; returns (table, the batches)."""
    spec = TableSpec.from_dict({**FIXED.to_dict(), "columns": [*COLUMNS_AB],
                                "options": {**FIXED.to_dict()["options"], **spec_options}})
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(n):
        size = 120
        frame = pd.DataFrame({"id": rng.integers(0, 150, size), "dt": rng.choice(["a", "b"], size),
                              "v": np.where(rng.random(size) < 0.3, np.nan, rng.integers(0, 9, size).astype(float)),
                              "s": np.where(rng.random(size) < 0.3, None, rng.choice(["x", "y", "z"], size))})
        frames.append(frame)
    return spec, frames


COLUMNS_AB = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"], ["s", "STRING"]]


def _write_frames(warehouse, spec, frames):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    for i, frame in enumerate(frames):
        ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
        upsert(ctx, pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}")
    return get_table(opts, "db.t")


def test_partial_update_merges_with_the_old_row(warehouse):
    """The batch's non-null fields over the old row's (Paimon's lookup merge), old row marked, merged row written."""
    spec, frames = _merged_runs({"merge-engine": "partial-update"}, seed=12)
    table = _write_frames(warehouse, spec, frames)
    rows = pd.concat(frames, ignore_index=True)
    expected = rows.groupby(["dt", "id"], sort=False).agg({"v": "last", "s": "last"}).reset_index()  # last non-null
    _assert_fixed(table, expected[["id", "dt", "v", "s"]])


def test_aggregation_merges_with_the_old_row(warehouse):
    spec, frames = _merged_runs({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                                 "fields.s.aggregate-function": "last_non_null_value"}, seed=13)
    table = _write_frames(warehouse, spec, frames)
    rows = pd.concat(frames, ignore_index=True)
    expected = rows.groupby(["dt", "id"], sort=False).agg(v=("v", lambda x: x.sum(min_count=1)),
                                                          s=("s", "last")).reset_index()
    _assert_fixed(table, expected[["id", "dt", "v", "s"]])


def test_sequence_field_keeps_the_row_with_the_higher_value(warehouse):
    spec, frames = _merged_runs({"sequence.field": "v"}, seed=14)
    frames = [f.assign(v=f.v.fillna(0)) for f in frames]
    table = _write_frames(warehouse, spec, frames)
    rows = pd.concat(frames, ignore_index=True).reset_index()
    expected = rows.sort_values(["v", "index"], kind="stable").drop_duplicates(["dt", "id"], keep="last")
    _assert_fixed(table, expected[["id", "dt", "v", "s"]])


@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
def test_input_changelog_of_a_deletion_vector_table(warehouse, spec):
    """With ``changelog-producer=input`` the changelog is the batch's records (the data files hold merged rows):
    each snapshot's changelog replayed on the table before it gives the table after it."""
    from airflow_paimon.engine.read.changelog_read import plan_changelog
    from changelog_tables import changelog_of, replay
    from incremental_oracle import read_at

    spec = TableSpec.from_dict({**spec.to_dict(), "options": {**spec.to_dict()["options"],
                                                               "changelog-producer": "input"}})
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    state, previous = pd.DataFrame(columns=["id", "dt", "v"]), 0
    for i, (frame, kinds) in enumerate(runs(seed=41, n=4)):
        sid, _ = write(warehouse, spec, frame, kinds, f"r{i}")
        table = get_table(opts, "db.t")
        changes = changelog_of(table, previous, sid)
        files = [p for w in plan_changelog(table, previous, sid) for p in w.files]
        assert len(changes) and files and all(p.rsplit("/", 1)[-1].startswith("changelog-") for p in files)
        state, previous = replay(state, changes), sid
        order = ["dt", "id"]
        pd.testing.assert_frame_equal(state[["id", "dt", "v"]].sort_values(order).reset_index(drop=True),
                                      read_at(table, sid)[["id", "dt", "v"]].sort_values(order).reset_index(drop=True),
                                      check_dtype=False)


@pytest.mark.parametrize("full", [False, True], ids=["universal", "full"])
def test_compaction_rewrites_buckets_without_their_deletion_vectors(warehouse, full):
    """Compaction reads each file without the rows its vector marks, writes the bucket as one run at the max
    level and drops the bucket's vectors; the table reads the same before and after, with every writer's view."""
    from local_runner import compact

    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**CROSS.to_dict(), "options": {**CROSS.to_dict()["options"], "num-levels": "5",
                                                               "num-sorted-run.compaction-trigger": "3"}})
    get_or_create_table(opts, "db.t", spec)
    done = []
    for i, (frame, kinds) in enumerate(runs(seed=5, n=4)):
        write(warehouse, spec, frame, kinds, f"r{i}")
        done.append(frame.assign(row_kind=KINDS[kinds]))
    table = get_table(opts, "db.t")
    before = table.snapshot_manager().get_latest_snapshot().id
    assert _deletion_vectors(table, before)
    result = compact(table, full=full, scope="table")
    assert result["compacted_buckets"] > 0 and result["snapshot_id"] == before + 1
    table = get_table(opts, "db.t")
    assert_table_equals(table, expected_upsert(done, "id", row_kind="row_kind"), "id")
    after = _deletion_vectors(table, result["snapshot_id"])
    live = live_entries(table, table.snapshot_manager().get_snapshot_by_id(result["snapshot_id"]))
    assert set(after) <= {e.file.file_name for e in live}  # no vector of a file the compaction removed
    assert len(after) < len(_deletion_vectors(table, before))
    if full:  # every bucket one run at the max level, no vectors left
        assert after == {} and {e.file.level for e in live} == {4}
    # the next write marks rows in the compacted files, still right
    frame, kinds = next(iter(runs(seed=6, n=2)))
    write(warehouse, spec, frame, kinds, "after")
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(done + [frame.assign(row_kind=KINDS[kinds])], "id",
                                                                 row_kind="row_kind"), "id")


def test_incremental_diff_applies_the_vectors(warehouse):
    """A key deleted or replaced through a vector only (no delete row anywhere) still reads as -D / +U."""
    from airflow_paimon.engine.read.incremental import diff_partition, plan_incremental
    from incremental_oracle import expected_diff, normalised

    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", CROSS)
    for i, (frame, kinds) in enumerate(runs(seed=31, n=4)):
        write(warehouse, CROSS, frame, kinds, f"r{i}")
    table = get_table(opts, "db.t")
    # each write is an APPEND (level 0, not read) and its COMPACT: snapshots 2, 4, 6, 8 hold the runs
    kinds_seen = set()
    for start, end in ((0, 2), (2, 4), (4, 6), (2, 8), (6, 8), (1, 2), (2, 3)):
        expected = expected_diff(table, start, end, ["dt", "id"])
        kinds_seen |= set(expected.row_kind)
        work = plan_incremental(table, start, end)
        if not work:  # an APPEND of level-0 files only: nothing readers see changed
            assert expected.empty and end % 2
            continue
        actual = pa.concat_tables([diff_partition(table, w) for w in work]).to_pandas()
        pd.testing.assert_frame_equal(normalised(actual[list(expected.columns)], ["dt", "id"]), expected,
                                      check_dtype=False)
    assert kinds_seen == {"+I", "+U", "-D"}


def test_a_write_is_an_append_then_its_compact_and_a_retry_finishes_it(warehouse, monkeypatch):
    """As Paimon's writers: the batch's records at level 0 in an APPEND snapshot, then a COMPACT snapshot of the
    same commit identity lifts them and swaps the vectors. A commit task stopped between the two commits the
    COMPACT when it is retried, and the run's rows become visible."""
    from airflow_paimon.engine.commit import committer
    from airflow_paimon.engine.runs.commit import run_commit

    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", FIXED)
    (first, k1), (second, k2) = list(runs(seed=9, n=2))
    write(warehouse, FIXED, first, k1, "r0")
    table = get_table(opts, "db.t")
    kinds = [table.snapshot_manager().get_snapshot_by_id(i) for i in (1, 2)]
    assert [s.commit_kind for s in kinds] == ["APPEND", "COMPACT"]
    assert kinds[0].commit_user == kinds[1].commit_user and kinds[0].commit_identifier == kinds[1].commit_identifier
    assert kinds[0].changelog_manifest_list is None  # no producer, no changelog

    spec = stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2),
                     pa.Table.from_pandas(second, schema=FIXED.arrow_schema(), preserve_index=False), "r1",
                     row_kinds=k2)

    class Stopped(Exception):
        pass

    def stop(name):
        if name == "commit.between_append_and_compact":
            raise Stopped(name)

    monkeypatch.setattr(committer, "crash_point", stop)
    with pytest.raises(Stopped):
        run_commit(spec)
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "APPEND"  # level 0: not visible yet
    expected_first = expected_upsert([first.assign(row_kind=KINDS[k1], k=first.dt + first.id.astype(str))], "k",
                                     row_kind="row_kind").drop(columns="k")
    _assert_fixed(table, expected_first)
    monkeypatch.undo()
    result = run_commit(spec)  # the retry
    assert result.snapshot_id == 4 and result.commit_kind == "COMPACT"
    both = [f.assign(row_kind=KINDS[k], k=f.dt + ":" + f.id.astype(str)) for f, k in ((first, k1), (second, k2))]
    _assert_fixed(get_table(opts, "db.t"), expected_upsert(both, "k", row_kind="row_kind").drop(columns="k"))
    assert run_commit(spec).already_committed  # and once more: nothing left to do


def test_expiry_and_orphan_removal_know_the_vector_index_files(warehouse):
    """Vector index files of retained snapshots are referenced (orphan removal keeps them, every read stays
    right); those only expired snapshots needed go with them."""
    import os

    from airflow_paimon.engine.maintenance.expire import ExpireOptions, expire_snapshots
    from airflow_paimon.engine.maintenance.orphans import orphan_files, remove_orphan_files

    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", CROSS)
    done = []
    for i, (frame, kinds) in enumerate(runs(seed=17, n=5)):
        write(warehouse, CROSS, frame, kinds, f"r{i}")
        done.append(frame.assign(row_kind=KINDS[kinds]))
    index_dir = os.path.join(warehouse, "db.db", "t", "index")
    before = set(os.listdir(index_dir))
    table = get_table(opts, "db.t")
    assert orphan_files(table, older_than_ms=2**62) == []  # nothing unreferenced, vector files included
    remove_orphan_files(table, older_than_ms=2**62)
    assert set(os.listdir(index_dir)) == before
    expire_snapshots(table, ExpireOptions(retain_min=1, time_retained_ms=0), now_ms=2**62)
    from pypaimon.manifest.index_manifest_file import IndexManifestFile

    table = get_table(opts, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot()
    live = {e.index_file.file_name for e in IndexManifestFile(table).read(latest.index_manifest)
            if e.index_file.index_type == "DELETION_VECTORS"}
    vector_files = {n for n in os.listdir(index_dir) if n.startswith("index-")}
    assert live and vector_files == live and vector_files < before  # the expired snapshots' vector files went
    assert_table_equals(table, expected_upsert(done, "id", row_kind="row_kind"), "id")


def test_scheduled_compaction_sees_deletion_vector_writes(warehouse):
    """A write's COMPACT half is not a compaction: the compact task (scope 'snapshot') finds the buckets the
    writes since the last real compaction touched, and compacts them once the universal strategy picks them."""
    from airflow_paimon.engine.compact.plan import writes_since_compaction
    from local_runner import compact

    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**CROSS.to_dict(), "options": {**CROSS.to_dict()["options"], "num-levels": "5",
                                                               "num-sorted-run.compaction-trigger": "3"}})
    get_or_create_table(opts, "db.t", spec)
    done = []
    for i, (frame, kinds) in enumerate(runs(seed=23, n=4)):  # levels 4, 3, 2, 1: four runs, above the trigger
        write(warehouse, spec, frame, kinds, f"r{i}")
        done.append(frame.assign(row_kind=KINDS[kinds]))
    table = get_table(opts, "db.t")
    assert len(writes_since_compaction(table, 8)) == 8  # four writes, two snapshots each
    result = compact(table, run_id="c1")  # scope snapshot, the universal strategy
    assert result["compacted_buckets"] > 0
    table = get_table(opts, "db.t")
    assert writes_since_compaction(table, result["snapshot_id"]) == []
    assert_table_equals(table, expected_upsert(done, "id", row_kind="row_kind"), "id")


@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
def test_lookup_changelog_has_exact_before_and_after_images(warehouse, spec):
    """``changelog-producer=lookup``: the write's COMPACT snapshot carries Paimon's lookup changelog — for a
    replaced key -U with the row it had and +U with its new row, +I for a new key, -D with the old row for a key
    deleted or moved away; replayed on the table before the write it gives the table after it."""
    from airflow_paimon.engine.read.changelog_read import plan_changelog
    from changelog_tables import changelog_of, replay
    from incremental_oracle import read_at

    spec = TableSpec.from_dict({**spec.to_dict(), "options": {**spec.to_dict()["options"],
                                                               "changelog-producer": "lookup"}})
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    identity, seen, previous = ["dt", "id"], set(), 0
    for i, (frame, kinds) in enumerate(runs(seed=51, n=4)):
        sid, _ = write(warehouse, spec, frame, kinds, f"r{i}")
        table = get_table(opts, "db.t")
        assert table.snapshot_manager().get_snapshot_by_id(sid - 1).changelog_manifest_list is None  # APPEND: none
        changes = changelog_of(table, previous, sid)
        files = [p for w in plan_changelog(table, previous, sid) for p in w.files]
        assert files and all(p.rsplit("/", 1)[-1].startswith("changelog-") for p in files)
        old = read_at(table, previous)[["id", "dt", "v"]].set_index(identity)
        new = read_at(table, sid)[["id", "dt", "v"]].set_index(identity)
        for kind, against in (("-U", old), ("-D", old), ("+U", new), ("+I", new)):
            rows = changes[changes.row_kind == kind][["id", "dt", "v"]].set_index(identity)
            assert rows.index.isin(against.index).all(), kind
            if len(rows):
                assert (rows.v.to_numpy() == against.loc[rows.index, "v"].to_numpy()).all(), kind
        assert not changes[changes.row_kind == "+I"].set_index(identity).index.isin(old.index).any()
        befores = changes[changes.row_kind == "-U"].set_index(identity).index
        assert befores.equals(changes[changes.row_kind == "+U"].set_index(identity).index)  # in pairs
        state = replay(old.reset_index(), changes)
        pd.testing.assert_frame_equal(state[["id", "dt", "v"]].sort_values(identity).reset_index(drop=True),
                                      new.reset_index()[["id", "dt", "v"]].sort_values(identity).reset_index(drop=True),
                                      check_dtype=False)
        seen |= set(changes.row_kind)
        previous = sid
    assert seen == {"+I", "-U", "+U", "-D"}


def test_index_rebuild_reads_keys_without_the_marked_rows(warehouse):
    """A rebuild of the cross-partition index (here: another shard count) reads every file without the rows its
    vector marks — replaced versions and deleted keys are not keys of the table — and the next write is right."""
    from local_runner import bootstrap_result

    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", CROSS)
    done = []
    for i, (frame, kinds) in enumerate(runs(seed=61, n=4)):
        write(warehouse, CROSS, frame, kinds, f"r{i}")
        done.append(frame.assign(row_kind=KINDS[kinds]))
    live = expected_upsert(done, "id", row_kind="row_kind")
    table = get_table(opts, "db.t")
    assert _deletion_vectors(table, table.snapshot_manager().get_latest_snapshot().id)
    rebuilt = bootstrap_result(opts, "db.t", warehouse + "/.index", 3)
    assert (rebuilt.index_decision, rebuilt.keys) == ("rebuilt", len(live))
    frame, kinds = list(runs(seed=62, n=2))[1]
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 3),
           pa.Table.from_pandas(frame, schema=CROSS.arrow_schema(), preserve_index=False), "after", row_kinds=kinds)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(done + [frame.assign(row_kind=KINDS[kinds])], "id",
                                                                 row_kind="row_kind"), "id")
