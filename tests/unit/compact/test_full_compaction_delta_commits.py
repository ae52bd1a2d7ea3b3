"""Paimon's ``full-compaction.delta-commits``: the compaction after every N-th write commit is full — every bucket
written since the last full compaction becomes one run at the max level — whatever the compact task was asked
for; ``changelog-producer=full-compaction`` makes it 1 unless set, as in Paimon, so each compaction emits the
changelog of every write (tests/unit/write/test_changelog_full_compaction.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.compact.plan import FULL_PROPERTY
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.files.scan import live_entries
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from changelog_tables import SPECS, with_options
from local_runner import bootstrap, compact, upsert
from oracle import assert_table_equals, expected_upsert

VECTORS = {"deletion-vectors.enabled": "true"}


def write(opts, spec, frame, run_id, kinds=None):
    upsert(bootstrap(opts, "db.t", opts["warehouse"] + "/.index", 2),
           pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), run_id, row_kinds=kinds)


def levels_by_bucket(table) -> dict:
    out = {}
    for e in live_entries(table, table.snapshot_manager().get_latest_snapshot()):
        out.setdefault((tuple(e.partition.values), e.bucket), []).append(e.file.level)
    return out


@pytest.mark.parametrize("extra", [{}, VECTORS], ids=["plain", "deletion-vectors"])
@pytest.mark.parametrize("shape", ["cross-partition", "fixed-bucket"])
def test_every_third_write_is_followed_by_a_full_compaction(warehouse, shape, extra):
    opts = {"warehouse": warehouse}
    # trigger 2: the universal strategy compacts in between too, those compactions are not full ones
    spec = with_options(SPECS[shape], {"full-compaction.delta-commits": "3", "num-levels": "4",
                                       "num-sorted-run.compaction-trigger": "2", **extra})
    get_or_create_table(opts, "db.t", spec)
    key = "id" if shape == "cross-partition" else None
    rng = np.random.default_rng(9)
    frames, in_between = [], 0
    for i in range(6):
        frame = pd.DataFrame({"id": rng.choice(300, 80, replace=False), "dt": rng.choice(["a", "b"], 80),
                              "v": rng.random(80)})
        frames.append(frame)
        write(opts, spec, frame, f"r{i}")
        result = compact(get_table(opts, "db.t"), run_id=f"c{i}")  # the compact task's default: not full
        table = get_table(opts, "db.t")
        snapshot = table.snapshot_manager().get_latest_snapshot()
        if i % 3 == 2:  # the third write since the last full compaction
            assert result["compacted_buckets"] > 0
            assert snapshot.commit_kind == "COMPACT" and snapshot.properties[FULL_PROPERTY] == "true"
            assert all(levels == [3] for levels in levels_by_bucket(table).values()), levels_by_bucket(table)
        else:
            assert FULL_PROPERTY not in (snapshot.properties or {})
            in_between += result["compacted_buckets"] > 0
        if key:
            assert_table_equals(table, expected_upsert(frames, key), key)
    assert in_between, "no compaction in between full ones: the test would not tell them apart"


def test_an_unparsable_delta_commits_is_refused(warehouse):
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**SPECS["fixed-bucket"].to_dict(),
                                "options": {"bucket": "2", "full-compaction.delta-commits": "0"}})
    with pytest.raises(ValidationError, match=r"db\.t.*full-compaction\.delta-commits.*'0'.*at least 1"):
        get_or_create_table(opts, "db.t", spec)
