"""The driver JVM of a real spark-submit maps the class-data-sharing archive the warm-up its job's first run
started wrote (spark/class_data_sharing.py, spark/warm_up.py): proved by the JVM's own class-loading log, not by
a timing."""
from __future__ import annotations

import json
import time

import pytest


@pytest.mark.spark
@pytest.mark.dag
def test_second_submit_loads_spark_classes_from_the_archive(airflow_home, warehouse, monkeypatch, tmp_path):
    from dag.dagrun import use_warehouse

    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
    from airflow_paimon.hooks.paimon import PaimonHook
    from airflow_paimon.operators.paimon import PaimonBootstrapIndexOperator

    use_warehouse(monkeypatch, warehouse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hook = PaimonHook()
    table_spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"]], "primary_keys": ["id"],
                                      "partition_keys": ["dt"], "options": {"bucket": "-1"}})
    get_or_create_table(hook.catalog_options(), "db.t", table_spec)
    spec = {"catalog_options": hook.catalog_options(), "table": "db.t", "shards": 2,
            "index_root": hook.index_root(), "table_spec": None}
    cds = tmp_path / "cache" / "airflow-paimon" / "cds"

    def submit(n: int) -> dict:
        op = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="db.t")
        op._submit(spec, str(tmp_path / f"result-{n}.json"))
        return json.loads((tmp_path / f"result-{n}.json").read_text())

    assert submit(1)["index_decision"] == "rebuilt"
    deadline = time.monotonic() + 600  # the warm-up runs in the background
    while list(cds.glob(".*.warming")) and time.monotonic() < deadline:
        time.sleep(1)
    archives = list(cds.iterdir())
    assert [a.name.split("-")[0] for a in archives] == ["session"] and archives[0].stat().st_size > 10**6
    assert not list(cds.glob(".*.tmp"))  # the dump went into place

    # JDK_JAVA_OPTIONS reaches every JVM of the spark-submit: each logs where its classes came from
    monkeypatch.setenv("JDK_JAVA_OPTIONS", f"-Xlog:class+load=info:file={tmp_path}/load-%p.log")
    submit(2)
    assert list(cds.iterdir()) == archives  # mapped, not dumped again
    driver = [p.read_text() for p in tmp_path.glob("load-*.log") if "org.apache.spark.SparkContext " in p.read_text()]
    assert len(driver) == 1
    shared = [line for line in driver[0].splitlines() if "source: shared objects file (top)" in line]
    assert any("org.apache.spark.SparkContext " in line for line in shared), driver[0][-2000:]
    assert len(shared) > 1000  # Spark's classes, not a handful
