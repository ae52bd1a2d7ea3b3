"""The daily upsert DAG on a real Spark standalone cluster on loopback (tests/spark_cluster.py). Read back
against the pandas oracle."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from airflow_paimon.engine.table.table import get_table
from airflow_paimon.spark.submit import SHORT_JOB_JAVA_OPTIONS
from dag.dagrun import run_dag, use_warehouse
from oracle import assert_table_equals, expected_upsert
from spark_cluster import executor_dirs, standalone_cluster

pytestmark = [pytest.mark.dag, pytest.mark.cluster]


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """spark://127.0.0.1:PORT with two workers of one core each; stopped at teardown."""
    import pyspark

    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster"),
                            Path(pyspark.__file__).parent / "bin" / "spark-class") as cluster:
        yield cluster


def test_daily_dag_on_a_standalone_cluster(airflow_home, warehouse, monkeypatch, spark_cluster, tmp_path):
    from paimon_upsert_daily import TABLE, dag
    from run_example import demo_batches

    use_warehouse(monkeypatch, warehouse)
    # executors run this interpreter (the package and pyspark installed), set in the connection, not in env
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(
        {"conn_type": "spark", "host": spark_cluster["master"],
         "extra": {"pyspark-python": sys.executable, "deploy-mode": "client"}}))
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    driver_local = tmp_path / "driver-local"
    driver_local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(driver_local))
    # executors of 512 MB fit the 1 GB workers; their jobs are tiny, so they start as the suite's other JVMs do
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.executor.memory 512m\nspark.cores.max 2\nspark.executor.extraJavaOptions {SHORT_JOB_JAVA_OPTIONS}\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))

    days = ["2026-11-01", "2026-11-02"]
    batches = demo_batches(days, rows_per_day=300, seed=5)
    source_root = airflow_home["sources"] / "orders"
    source_root.mkdir(parents=True, exist_ok=True)
    last = 0
    for i, (day, batch) in enumerate(zip(days, batches)):
        batch.to_parquet(source_root / f"{day}.parquet", index=False)
        run, states, xcoms = run_dag(dag, day)
        assert run.state == "success", states
        assert xcoms["commit"]["snapshot_id"] == last + 1
        last = xcoms["compact"]["snapshot_id"]
        assert last in (xcoms["commit"]["snapshot_id"], xcoms["commit"]["snapshot_id"] + 1)
        assert_table_equals(get_table({"warehouse": warehouse}, TABLE), expected_upsert(batches[: i + 1], "order_id"),
                            "order_id")
    # the jobs really ran on the cluster: each worker started executors in its own work directory
    ran = {d.parents[2].name for d in executor_dirs(spark_cluster)}
    assert ran == {"worker0", "worker1"}, f"executors ran on {ran}"
