"""A task's log through a real spark-submit (the driver JVM gets our log4j2 configuration, spark/job_frame.py
submit_conf): one progress line per job, made from the job's result, and no Spark INFO line unless spark_conf
asks for Spark's INFO level."""
from __future__ import annotations

import re

import pandas as pd
import pytest

# Spark's log4j layout (ours keeps it): "26/11/23 11:24:17 INFO SparkContext: ..."
SPARK_INFO = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO \w")


@pytest.mark.spark
@pytest.mark.dag
def test_task_log_through_spark_submit(airflow_home, warehouse, monkeypatch, tmp_path, capfd):
    """A DAG of bootstrap → write → commit through spark-submit: each task logs its progress line once, the
    result is not logged a second time, and no Spark INFO line (nor Spark's default-profile notice) is in the
    output. One job more with spark_conf {"spark.log.level": "INFO"}: Spark's INFO lines are back."""
    from dag.dagrun import run_dag, use_warehouse
    from paimon_test_dags import seed

    from airflow_paimon.hooks.paimon import PaimonHook
    from airflow_paimon.operators.paimon import PaimonBootstrapIndexOperator

    use_warehouse(monkeypatch, warehouse)
    source = tmp_path / "batch.parquet"
    pd.DataFrame({"id": range(1200), "dt": ["a", "b"] * 600, "v": 1.0}).to_parquet(source, index=False)
    capfd.readouterr()
    run, states, xcoms = run_dag(seed, conf={"source": str(source)})
    captured = capfd.readouterr()
    log = captured.out + captured.err
    assert run.state == "success", states
    lines = log.splitlines()
    progress = [line for line in lines if re.search(r"(bootstrap-index|assign-and-write|commit) db\.t: ", line)]
    assert len(progress) == 3, progress
    assert "index rebuilt on the empty table" in progress[0]
    assert "1,200 rows in, 1,200 new keys, 0 moved, 1,200 rows and 0 deletes written" in progress[1]
    assert f"snapshot 1 APPEND, 1,200 records, {xcoms['assign_and_write']['files']} files" in progress[2]
    assert not [line for line in lines if SPARK_INFO.search(line) or "log4j profile" in line], log
    assert "result:" not in log and "'index_uri'" not in log  # the result is logged once: as the progress line

    # Spark's INFO level asked for: the driver's whole log is back, from the JVM's start
    hook = PaimonHook()
    op = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="db.t", spark_conf={"spark.log.level": "INFO"})
    spec = {"catalog_options": hook.catalog_options(), "table": "db.t", "shards": 2,
            "index_root": hook.index_root(), "table_spec": None}
    op._submit(spec, str(tmp_path / "result.json"))
    captured = capfd.readouterr()
    info = [line for line in (captured.out + captured.err).splitlines() if SPARK_INFO.search(line)]
    assert any("SparkContext: Running Spark version" in line for line in info), info
