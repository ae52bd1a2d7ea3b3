"""``changelog-producer=input``: every commit registers the rows it wrote, with their row kinds, as the snapshot's
changelog; replaying each snapshot's changelog on the table before it gives the table after it (pandas), and Java
Paimon reads the same changelog (tests/java)."""
from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.read.changelog_read import plan_changelog
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.read.incremental import scan_mode_of
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from changelog_tables import CROSS, FIXED, KINDS, changelog_of, replay, soak, write_all
from incremental_oracle import read_at
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

def normal(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["id", "dt", "v"]].sort_values(["dt", "id"]).reset_index(drop=True)


@pytest.mark.parametrize("spec", [CROSS, FIXED], ids=["cross-partition", "fixed-bucket"])
def test_each_snapshot_changelog_replays_to_the_table(warehouse, spec):
    batches = soak(seed=11)
    snapshots = write_all(warehouse, spec, batches)
    table = get_table({"warehouse": warehouse}, "db.t")
    key = "id" if spec is CROSS else ["dt", "id"]
    frames = [f.assign(row_kind=KINDS[k]) for f, k in batches]
    if spec is CROSS:  # the oracle: deduplicate over id, wherever the key lives
        assert_table_equals(table, expected_upsert(frames, "id", row_kind="row_kind"), "id")
    state = pd.DataFrame(columns=["id", "dt", "v"])
    for previous, sid in zip([0] + snapshots, snapshots):
        snapshot = table.snapshot_manager().get_snapshot_by_id(sid)
        assert snapshot.changelog_manifest_list and snapshot.changelog_record_count > 0
        changes = changelog_of(table, previous, sid)
        assert len(changes) == snapshot.changelog_record_count
        assert not changes.duplicated(["dt", "id"]).any()  # one change per key and partition per commit
        state = replay(state, changes)
        pd.testing.assert_frame_equal(normal(state), normal(read_at(table, sid)), check_dtype=False)
    assert not read_at(table, snapshots[-1]).duplicated(key).any()
    moved = changelog_of(table, snapshots[1] - 1, snapshots[1])
    if spec is CROSS:  # a key that moved partition: -D in the old partition and a row in the new one
        deleted, written = moved[moved.row_kind == "-D"], moved[moved.row_kind != "-D"]
        both = deleted.merge(written, on="id", suffixes=("_old", "_new"))
        assert (both.dt_old != both.dt_new).any()
    # a range reads every snapshot's changelog in commit order
    pd.testing.assert_frame_equal(normal(replay(pd.DataFrame(columns=["id", "dt", "v"]),
                                                changelog_of(table, 0, snapshots[-1]).sort_index(kind="stable"))),
                                  normal(read_at(table, snapshots[-1])), check_dtype=False)


def test_changelog_files_live_next_to_the_data_and_expire_with_their_snapshot(warehouse):
    from airflow_paimon.engine.maintenance.expire import ExpireOptions, expire_snapshots

    snapshots = write_all(warehouse, FIXED, soak(seed=3, n_batches=3))
    table = get_table({"warehouse": warehouse}, "db.t")
    first = plan_changelog(table, 0, snapshots[0])
    paths = [p.replace("file://", "") for w in first for p in w.files]
    assert paths and all(os.path.exists(p) and os.path.basename(p).startswith("changelog-") for p in paths)
    expire_snapshots(table, ExpireOptions(retain_min=1, time_retained_ms=0), now_ms=2**62)
    assert not any(os.path.exists(p) for p in paths)  # the expired snapshot's changelog went with it
    kept = [p.replace("file://", "") for w in plan_changelog(table, snapshots[-1] - 1, snapshots[-1]) for p in w.files]
    assert kept and all(os.path.exists(p) for p in kept)


def test_scan_mode(warehouse):
    write_all(warehouse, FIXED, soak(seed=1, n_batches=1))
    table = get_table({"warehouse": warehouse}, "db.t")
    assert scan_mode_of(table, "db.t", "auto") == "changelog" and scan_mode_of(table, "db.t", "diff") == "diff"
    plain = get_or_create_table({"warehouse": warehouse}, "db.plain", TableSpec.from_dict(
        {**FIXED.to_dict(), "options": {"bucket": "3"}}))
    assert scan_mode_of(plain, "db.plain", "auto") == "diff"
    with pytest.raises(ValidationError, match="table db.plain, option 'changelog-producer'.*has none"):
        scan_mode_of(plain, "db.plain", "changelog")
    with pytest.raises(ValidationError, match="scan_mode must be one of"):
        scan_mode_of(table, "db.t", "delta")


def test_a_partition_overwrite_commits_no_changelog(warehouse):
    batches = soak(seed=2, n_batches=1)
    snapshots = write_all(warehouse, FIXED, batches)
    opts = {"warehouse": warehouse}
    ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    frame = pd.DataFrame({"id": [1, 2], "dt": ["a", "a"], "v": [0.5, 0.25]})
    sid, _ = upsert(ctx, pa.Table.from_pandas(frame, schema=FIXED.arrow_schema(), preserve_index=False), "ow",
                    write_mode="overwrite")
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_snapshot_by_id(sid).commit_kind == "OVERWRITE"
    assert plan_changelog(table, snapshots[-1], sid) == []  # as Paimon: an overwrite commits no changelog
    changelog_files = [f for root, _, files in os.walk(os.path.join(warehouse, "db.db", "t", "dt=a"))
                      for f in files if f.startswith("changelog-")]
    assert len(changelog_files) == len([p for w in plan_changelog(table, 0, snapshots[-1]) for p in w.files
                                       if "/dt=a/" in p])  # none written for it either
