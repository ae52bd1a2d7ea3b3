"""The backfill DAG with write_mode=overwrite through the Spark jobs: the batch's partitions replaced, a key
moved in from another partition leaves it, the next run's bootstrap rebuilds the index and its upsert is
right."""
from __future__ import annotations

import pandas as pd
import pytest

from airflow_paimon.engine.table.table import get_table
from dag.dagrun import run_dag, use_warehouse
from oracle import assert_table_equals, expected_upsert, read_table

pytestmark = [pytest.mark.dag, pytest.mark.usefixtures("on_spark_connect")]


def test_backfill_overwrites_the_partitions_of_its_source(airflow_home, warehouse, monkeypatch, tmp_path):
    from paimon_backfill import dag
    from paimon_test_dags import seed

    use_warehouse(monkeypatch, warehouse)
    first = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6, 7], "dt": list("aabbccc"), "v": [1.0, 2, 3, 4, 5, 6, 7]})
    first.to_parquet(tmp_path / "first.parquet", index=False)
    assert run_dag(seed, conf={"source": str(tmp_path / "first.parquet")})[0].state == "success"

    # replaces a and b: 1 stays (new value), 2 and 3 vanish, 5 moves in from c, 8 is new; c keeps 6 and 7
    backfill = pd.DataFrame({"id": [1, 4, 5, 8], "dt": list("abab"), "v": [10.0, 40, 50, 80]})
    backfill.to_parquet(tmp_path / "backfill.parquet", index=False)
    # every param given: dag.test() keeps a previous run's conf in the DAG's params (same process)
    conf = {"source_path": str(tmp_path / "backfill.parquet"), "table": "db.t", "write_mode": "overwrite",
            "source_format": None}
    run, states, xcoms = run_dag(dag, conf=conf)
    assert run.state == "success", states
    table = get_table({"warehouse": warehouse}, "db.t")
    expected = pd.DataFrame({"id": [1, 4, 5, 6, 7, 8], "dt": list("abacb")[:3] + ["c", "c", "b"],
                             "v": [10.0, 40, 50, 6, 7, 80]})
    assert_table_equals(table, expected, "id")
    overwrite = table.snapshot_manager().get_snapshot_by_id(xcoms["commit"]["snapshot_id"])
    assert overwrite.commit_kind == "OVERWRITE" and xcoms["assign_and_write"]["moved_keys"] == 1

    later = pd.DataFrame({"id": [2, 5, 6], "dt": list("cca"), "v": [200.0, 500, 600]})  # 2 is new again
    later.to_parquet(tmp_path / "later.parquet", index=False)
    run, states, xcoms = run_dag(dag, conf={**conf, "source_path": str(tmp_path / "later.parquet"),
                                            "write_mode": "upsert"})
    assert run.state == "success", states
    assert xcoms["bootstrap_index"]["reused"] is False  # past an OVERWRITE the index is rebuilt
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert([later], "id", start=expected),
                        "id")
    assert not read_table(get_table({"warehouse": warehouse}, "db.t")).id.duplicated().any()
