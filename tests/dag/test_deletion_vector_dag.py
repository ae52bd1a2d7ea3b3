"""Deletion-vector tables written by the DAG's Spark jobs (on Spark Connect): a cross-partition and a dynamic-bucket
table (and a cross-partition table with the lookup changelog producer, no vectors), three runs of updates, moves
and in-batch duplicates each; after every commit pypaimon reads the pandas
oracle's table (no key twice, every run's rows visible), and Java Paimon reads the same at the end."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from changelog_tables import changelog_of, replay
from dag.dagrun import run_dag, use_warehouse
from java_paimon import assert_java_reads_as_pypaimon, missing
from oracle import read_table

pytestmark = [pytest.mark.dag, pytest.mark.usefixtures("on_spark_connect")]

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
SHAPES = {
    "cross-partition": {"primary_keys": ["id"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "50"}},
    "dynamic-bucket": {"primary_keys": ["dt", "id"],
                       "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "50"}},
}


# Both lift each write's level 0 in a COMPACT snapshot of the commit: deletion vectors mark the old rows; the lookup
# changelog producer without vectors merges into the bucket's lowest run and emits the changelog.
MODES = {"deletion-vectors": {"deletion-vectors.enabled": "true"}, "lookup-changelog": {"changelog-producer": "lookup"}}


@pytest.mark.parametrize("shape,mode", [(shape, "deletion-vectors") for shape in SHAPES]
                         + [("cross-partition", "lookup-changelog")])
def test_deletion_vector_table_through_the_dag(airflow_home, warehouse, monkeypatch, tmp_path, shape, mode):
    from paimon_test_dags import write

    use_warehouse(monkeypatch, warehouse)
    spec = TableSpec.from_dict({"columns": COLUMNS, "partition_keys": ["dt"], **SHAPES[shape],
                                "options": {**SHAPES[shape]["options"], **MODES[mode], "num-levels": "3"}})
    get_or_create_table({"warehouse": warehouse}, "db.dv", spec)
    key = list(spec.primary_keys)
    rng = np.random.default_rng(3)
    seen, state = [], pd.DataFrame({"id": [], "dt": [], "v": []})
    for i in range(3):
        n = 300
        batch = pd.DataFrame({"id": rng.integers(0, 400, n), "dt": rng.choice(["a", "b", "c"], n),
                              "v": rng.random(n).round(3)})
        source = tmp_path / f"batch-{i}.parquet"
        batch.to_parquet(source, index=False)
        run, states, xcoms = run_dag(write, conf={"table": "db.dv", "source": str(source)})
        assert run.state == "success", states
        commit = xcoms["commit"]
        assert commit["commit_kind"] == "COMPACT" and commit["snapshot_id"] == 2 * (i + 1)  # APPEND, then COMPACT
        if shape == "cross-partition" and i:  # the index of the COMPACT snapshot is published: kept between runs
            assert xcoms["bootstrap_index"]["index_decision"] == "reused", xcoms["bootstrap_index"]
        seen.append(batch)
        expected = pd.concat(seen).drop_duplicates(key, keep="last")  # the last row of a key wins
        actual = read_table(get_table({"warehouse": warehouse}, "db.dv"))
        assert not actual.duplicated(key).any()
        order = key if "dt" in key else ["id"]
        pd.testing.assert_frame_equal(actual[["id", "dt", "v"]].sort_values(order).reset_index(drop=True),
                                      expected.sort_values(order).reset_index(drop=True), check_dtype=False)
        if mode == "lookup-changelog":  # the COMPACT snapshot's changelog takes the table from run i-1 to run i
            state = replay(state, changelog_of(get_table({"warehouse": warehouse}, "db.dv"), 2 * i, 2 * (i + 1)))
            assert sorted(state.itertuples(index=False, name=None)) == sorted(
                actual[["id", "dt", "v"]].itertuples(index=False, name=None))
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.dv", key)
