"""The daily upsert DAG on a real Spark standalone cluster on loopback: a master and two workers, each with
its own work and local directories, so the driver and the executors are different processes that share
nothing but the warehouse directory. Read back against the pandas oracle."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_paimon.engine.table import get_table
from dag.dagrun import run_dag, use_warehouse
from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.dag, pytest.mark.cluster]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise TimeoutError(what)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """spark://127.0.0.1:PORT with two workers of one core each; stopped at teardown."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    root = tmp_path_factory.mktemp("spark-cluster")
    port, ui = free_port(), free_port()
    base_env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    procs, logs = [], []

    def start(name, args, env):
        log = open(root / f"{name}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen([str(spark_class), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))

    start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                     "--webui-port", str(ui)], base_env)
    master = f"spark://127.0.0.1:{port}"
    wait_until(lambda: "Starting Spark master" in (root / "master.log").read_text()
               and "I have been elected leader" in (root / "master.log").read_text(), 60, "master up")
    for i in range(2):
        work, local = root / f"worker{i}" / "work", root / f"worker{i}" / "local"
        work.mkdir(parents=True)
        local.mkdir(parents=True)
        start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores", "1",
                             "--memory", "1g", "--webui-port", "0", "--work-dir", str(work)],
              {**base_env, "SPARK_WORKER_DIR": str(work), "SPARK_LOCAL_DIRS": str(local)})
    wait_until(lambda: all("Successfully registered with master" in (root / f"worker{i}.log").read_text()
                           for i in range(2)), 90, "workers registered")
    yield {"master": master, "root": root}
    for p in procs:
        os.killpg(p.pid, 15)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
    for log in logs:
        log.close()


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
    conf_dir = tmp_path / "spark-conf"  # executors of 512 MB fit the 1 GB workers
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.executor.memory 512m\nspark.cores.max 2\n")
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
    for i in range(2):
        apps = list((spark_cluster["root"] / f"worker{i}" / "work").glob("app-*"))
        assert apps, f"worker{i} ran no executor"
