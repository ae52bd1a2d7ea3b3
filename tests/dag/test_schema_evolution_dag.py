"""Schema evolution through dag.test() (jobs on Spark Connect): day 2's parquet source has a column the table
lacks; without schema_evolution the write fails naming it and leaves the table, with "add_columns" the
paimon_upsert group adds it, writes, commits and compacts across both schemas."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from airflow_paimon.engine.files.scan import latest_snapshot, live_entries
from airflow_paimon.engine.table.table import get_table
from dag.dagrun import job_errors, run_dag, use_warehouse
from java_paimon import assert_java_reads_as_pypaimon, missing
from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.dag, pytest.mark.usefixtures("on_spark_connect")]


def test_a_new_source_column_is_added_by_the_dag(airflow_home, warehouse, monkeypatch, tmp_path):
    from paimon_test_dags import bad_input, schema_evolution

    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    day1 = pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2.0, 3.0, 4.0]})
    day2 = pd.DataFrame({"id": [1, 3, 5], "dt": list("bba"), "v": [10.0, 30.0, 50.0],  # 1 moves, 3 updates
                         "email": ["a@x", None, "e@x"]})
    day1.to_parquet(tmp_path / "day1.parquet", index=False)
    day2.to_parquet(tmp_path / "day2.parquet", index=False)

    run, states, _ = run_dag(schema_evolution, conf={"source": str(tmp_path / "day1.parquet")})
    assert run.state == "success", states

    # the same source through a write without schema evolution: refused by name, the table untouched
    run, states, _ = run_dag(bad_input, conf={"source": str(tmp_path / "day2.parquet")})
    assert run.state == "failed" and states["assign_and_write"] == "failed"
    assert any("table db.t, column 'email'" in e and "not in the table" in e
               for e in job_errors(warehouse, "test_bad_input"))
    assert sorted(os.listdir(os.path.join(warehouse, "db.db", "t", "schema"))) == ["schema-0"]

    run, states, xcoms = run_dag(schema_evolution, conf={"source": str(tmp_path / "day2.parquet")})
    assert run.state == "success", states
    assert xcoms["upsert.bootstrap_index"]["index_decision"] == "reused"
    assert xcoms["upsert.assign_and_write"]["moved_keys"] == 1
    assert xcoms["upsert.compact"]["compacted_buckets"] > 0
    table = get_table(opts, "db.t")
    assert [f.name for f in table.table_schema.fields] == ["id", "dt", "v", "email"]
    assert sorted(os.listdir(os.path.join(warehouse, "db.db", "t", "schema"))) == ["schema-0", "schema-1"]
    # files of both schemas merged by the compaction; a bucket day 2 did not touch keeps its schema-0 file
    assert 1 in {e.file.schema_id for e in live_entries(table, latest_snapshot(table))}
    assert_table_equals(table, expected_upsert([day1.assign(email=None), day2], "id"), "id")

    # day 3: the next run's bootstrap keeps the index across the schema change
    run, states, xcoms = run_dag(schema_evolution, conf={"source": str(tmp_path / "day2.parquet")})
    assert run.state == "success", states
    assert xcoms["upsert.bootstrap_index"]["index_decision"] in ("reused", "caught_up")
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])


def test_example_dag_day_three_brings_a_new_column(airflow_home, warehouse, monkeypatch):
    """dags/paimon_customers_evolving.py over three days; day 3's feed has an ``email`` column."""
    from paimon_customers_evolving import TABLE, dag

    use_warehouse(monkeypatch, warehouse)
    feed = airflow_home["sources"] / "customers"
    feed.mkdir(parents=True, exist_ok=True)
    days = ["2026-11-01", "2026-11-02", "2026-11-03"]
    batches = [
        pd.DataFrame({"customer_id": [1, 2, 3], "name": ["ann", "bo", "cy"], "country": ["NL", "DE", "FR"],
                      "score": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"customer_id": [2, 4], "name": ["bo", "di"], "country": ["AT", "BE"], "score": [2.5, 4.0]}),
        pd.DataFrame({"customer_id": [3, 5], "name": ["cy", "ed"], "country": ["FR", "ES"], "score": [3.5, 5.0],
                      "email": ["cy@x", None]}),
    ]
    for day, batch in zip(days, batches):
        batch.to_parquet(feed / f"{day}.parquet", index=False)
        run, states, xcoms = run_dag(dag, day)
        assert run.state == "success", states
    table = get_table({"warehouse": warehouse}, TABLE)
    assert [f.name for f in table.table_schema.fields] == ["customer_id", "name", "country", "score", "email"]
    schema_dir = os.path.join(warehouse, "demo.db", "customers", "schema")
    assert sorted(os.listdir(schema_dir)) == ["schema-0", "schema-1"]  # one change, on day 3 only
    expected = expected_upsert([b.assign(email=None) for b in batches[:2]] + [batches[2]], "customer_id")
    assert_table_equals(table, expected, "customer_id")  # customers 1, 2, 4: email null
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, TABLE, ["customer_id"])
