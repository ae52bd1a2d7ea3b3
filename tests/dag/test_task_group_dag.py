"""The paimon_upsert TaskGroup and XComArg wiring through dag.test() (jobs on Spark Connect): two tables in one
DAG committed together, read back with pypaimon against the pandas oracle; an XComArg of another table's task
and a missing upstream refused before anything is staged."""
from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from dag.dagrun import run_dag, use_warehouse
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.dag, pytest.mark.usefixtures("on_spark_connect")]


def seed(warehouse: str, identifier: str, schema: dict, data: pd.DataFrame) -> None:
    """The table with one snapshot of ``data``, written in-process (the hook's default index/staging roots)."""
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict(schema)
    get_or_create_table(opts, identifier, spec)
    upsert(bootstrap(opts, identifier, layout.default_root(warehouse, "index"), 4),
           pa.Table.from_pandas(data, schema=spec.arrow_schema(), preserve_index=False), run_id="seed")


def test_two_groups_commit_their_own_tables(airflow_home, warehouse, monkeypatch):
    from paimon_upsert_group import CUSTOMERS, CUSTOMERS_SCHEMA, ORDERS, ORDERS_SCHEMA, dag
    from run_example import demo_batches

    # Each commit has both tables' assign-and-write upstream: only the XComArg says which is its own.
    assert dag.get_task("shop_orders.commit").upstream_task_ids == {"shop_orders.assign_and_write",
                                                                    "shop_customers.assign_and_write"}
    use_warehouse(monkeypatch, warehouse)
    day = "2026-11-02"
    orders = demo_batches(["2026-11-01", day], rows_per_day=300, seed=41)
    customers = [pd.DataFrame({"customer": [f"c{i}" for i in range(60)], "name": [f"n{i}" for i in range(60)],
                               "city": ["Oslo", "Lima", "Pune"] * 20}),
                 pd.DataFrame({"customer": ["c5", "c70", "c5", "c71", "c0"],  # c5 twice: the last row wins
                               "name": ["n5b", "n70", "n5c", "n71", "n0b"], "city": ["Rome"] * 5})]
    seed(warehouse, ORDERS, ORDERS_SCHEMA, orders[0])
    seed(warehouse, CUSTOMERS, CUSTOMERS_SCHEMA, customers[0])
    sources = airflow_home["sources"]
    for name, frames in (("orders", orders), ("customers", customers)):
        os.makedirs(sources / name, exist_ok=True)
        frames[1].to_parquet(sources / name / f"{day}.parquet", index=False)

    run, states, xcoms = run_dag(dag, day)

    assert run.state == "success", states
    for group, table, frames, key in (("shop_orders", ORDERS, orders, "order_id"),
                                      ("shop_customers", CUSTOMERS, customers, "customer")):
        assert states[f"{group}.compact"] == "skipped"  # two writes since the last compaction: not due yet
        write, commit = xcoms[f"{group}.assign_and_write"], xcoms[f"{group}.commit"]
        assert write["table"] == commit["table"] == table
        assert write["rows_in"] == len(frames[1])
        assert (commit["base_snapshot_id"], commit["snapshot_id"]) == (1, 2), commit
        assert_table_equals(get_table({"warehouse": warehouse}, table), expected_upsert(frames, key), key)
    assert xcoms["shop_orders.assign_and_write"]["moved_keys"] > 0  # the batch moved keys across partitions


def test_upstream_output_of_another_table_and_no_upstream_fail_clearly(airflow_home, warehouse, monkeypatch,
                                                                      tmp_path, capfd, caplog):
    use_warehouse(monkeypatch, warehouse)
    source = tmp_path / "batch.parquet"
    pd.DataFrame({"id": [1, 2], "v": [1.0, 2.0]}).to_parquet(source, index=False)
    get_or_create_table({"warehouse": warehouse}, "db.a", TableSpec.from_dict(
        {"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"], "options": {"bucket": "1"}}))
    from paimon_task_group_dags import wrong_upstream

    run, states, xcoms = run_dag(wrong_upstream, conf={"source": str(source)})

    assert run.state == "failed" and xcoms["bootstrap_b"]["table"] == "db.b", states
    assert states["assign_and_write_a"] == states["commit_a"] == "failed", states
    for task_id in ("assign_and_write_a", "commit_a"):  # not retried (retries=1): a retry cannot fix wiring
        assert run.get_task_instance(task_id).try_number == 1, task_id
    out, err = capfd.readouterr()
    logs = out + err + caplog.text
    assert "assign_and_write_a writes table db.a but its upstream bootstrap_b is for table db.b" in logs
    assert "commit_a (table db.a): no upstream PaimonAssignAndWriteOperator" in logs
    assert not os.path.exists(layout.staging_dir(layout.default_root(warehouse, "staging"), "db.a"))  # nothing staged
    assert get_table({"warehouse": warehouse}, "db.a").snapshot_manager().get_latest_snapshot() is None
