"""``changelog-producer=full-compaction``: writes register no changelog; a compaction into the max level registers,
in its COMPACT snapshot, the changelog between the rows the max level held and the merged result (Paimon's
FullChangelogMergeTreeCompactRewriter). Replaying every changelog in order on the empty table gives the table at
each full compaction (pandas), through inserts, updates, moves, deletes and in-batch duplicates, for every bucket
mode. Java Paimon reads the same changelog (tests/java). (Deletion vectors are refused with it, as in Paimon.)"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.read.incremental import scan_mode_of
from airflow_paimon.engine.table.table import get_or_create_table, get_table
from changelog_tables import FULL, SPECS, changelog_of, replay, soak, with_options, write_and_compact
from local_runner import compact
from incremental_oracle import read_at
from local_runner import bootstrap, upsert

EMPTY = pd.DataFrame(columns=["id", "dt", "v"])


def normal(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["id", "dt", "v"]].sort_values(["dt", "id"]).reset_index(drop=True)


@pytest.mark.parametrize("every", [1, 2])
@pytest.mark.parametrize("shape", list(SPECS))
@pytest.mark.slow
def test_changelog_replays_to_the_table_at_each_full_compaction(warehouse, shape, every):
    spec = with_options(SPECS[shape], FULL)
    compactions = write_and_compact(warehouse, spec, soak(seed=13, n_batches=5), every=every)
    table = get_table({"warehouse": warehouse}, "db.t")
    manager = table.snapshot_manager()
    state, previous, kinds = EMPTY, 0, set()
    for sid in compactions:
        snapshot = manager.get_snapshot_by_id(sid)
        assert snapshot.commit_kind == "COMPACT" and snapshot.changelog_manifest_list
        for between in range(previous + 1, sid):  # the writes: no changelog
            assert manager.get_snapshot_by_id(between).changelog_manifest_list is None
        changes = changelog_of(table, previous, sid)
        assert not changes.duplicated(["dt", "id", "row_kind"]).any()
        state, previous, kinds = replay(state, changes), sid, kinds | set(changes.row_kind)
        now = read_at(table, sid)
        assert not now.duplicated(["id"] if shape == "cross-partition" else ["dt", "id"]).any()
        pd.testing.assert_frame_equal(normal(state), normal(now), check_dtype=False)
    assert kinds == {"+I", "-U", "+U", "-D"}
    assert scan_mode_of(table, "db.t", "auto") == "changelog"


def test_each_compaction_is_full_by_default(warehouse):
    """Without full-compaction.delta-commits Paimon fully compacts after every commit: the compact task's default
    (not full) compaction is full here, so each write's changelog is out after its compaction and replays."""
    opts = {"warehouse": warehouse}
    spec = with_options(SPECS["cross-partition"], FULL)
    get_or_create_table(opts, "db.t", spec)
    state, previous = EMPTY, 0
    for i, (frame, kinds) in enumerate(soak(seed=17, n_batches=4)):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}", row_kinds=kinds)
        sid = compact(get_table(opts, "db.t"), run_id=f"c{i}")["snapshot_id"]
        table = get_table(opts, "db.t")
        assert table.snapshot_manager().get_snapshot_by_id(sid).changelog_manifest_list
        state, previous = replay(state, changelog_of(table, previous, sid)), sid
        pd.testing.assert_frame_equal(normal(state), normal(read_at(table, sid)), check_dtype=False)


def test_a_key_left_alone_emits_nothing_and_an_unchanged_one_only_when_asked(warehouse):
    """A key that only the max level holds is not in the changelog; a key written again with the same value reads
    -U/+U (Paimon's default), or nothing with ``changelog-producer.row-deduplicate``."""
    base = pd.DataFrame({"id": [1, 2, 3], "dt": ["a", "a", "a"], "v": [0.1, 0.2, 0.3]})
    again = pd.DataFrame({"id": [2, 3], "dt": ["a", "a"], "v": [0.2, 0.9]})  # 2 unchanged, 3 changed, 1 untouched
    for dedup, expected in (("false", ["-U 2", "+U 2", "-U 3", "+U 3"]), ("true", ["-U 3", "+U 3"])):
        warehouse_dedup = f"{warehouse}/{dedup}"
        spec = with_options(SPECS["fixed-bucket"], {**FULL, "changelog-producer.row-deduplicate": dedup})
        first, second = write_and_compact(warehouse_dedup, spec, [(base, None), (again, None)])
        table = get_table({"warehouse": warehouse_dedup}, "db.t")
        assert sorted(changelog_of(table, 0, first).id) == [1, 2, 3]
        changes = changelog_of(table, first, second)
        assert sorted(f"{k} {i}" for k, i in zip(changes.row_kind, changes.id)) == sorted(expected)


def test_universal_compaction_into_the_max_level_emits_and_below_does_not(warehouse):
    """The universal strategy's picks: a bucket compacted to a level below the max registers no changelog, one
    compacted into the max level does."""
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    from airflow_paimon.engine.maintenance.references import SnapshotReader

    spec = with_options(SPECS["fixed-bucket"], {**FULL, "num-sorted-run.compaction-trigger": "2", "num-levels": "4",
                                                 "compaction.max-size-amplification-percent": "1000",
                                                 "full-compaction.delta-commits": "1000"})  # not full: universal picks
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    below = top = 0
    rng = np.random.default_rng(5)
    sizes = [20000, 20000, 50, 50, 50, 50]  # a big max level, small runs above it: the size ratio leaves it out
    batches = [(pd.DataFrame({"id": rng.choice(40000, n, replace=False), "dt": rng.choice(["a", "b"], n),
                              "v": rng.random(n)}), None) for n in sizes]
    for i, (frame, kinds) in enumerate(batches):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}", row_kinds=kinds)
        result = compact(get_table(opts, "db.t"), run_id=f"c{i}")
        if not result["compacted_buckets"]:
            continue
        table = get_table(opts, "db.t")
        snapshot = table.snapshot_manager().get_snapshot_by_id(result["snapshot_id"])
        output = {(tuple(e.partition.values), e.bucket): e.file.level
                  for e in SnapshotReader(table).delta_entries(snapshot) if e.kind == 0}
        emitted = {(tuple(e.partition.values), e.bucket)
                   for m in (ManifestListManager(table).read_changelog(snapshot) if snapshot.changelog_manifest_list
                             else []) for e in ManifestFileManager(table).read(m.file_name, drop_stats=True)}
        assert emitted == {b for b, level in output.items() if level == 3}
        top, below = top + len(emitted), below + len(output) - len(emitted)
    assert top and below
