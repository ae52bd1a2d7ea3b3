"""OpenLineage of the write operators: dataset names, namespaces and schema fields from a real table (no
OpenLineage needed), the lineage objects and the Spark conf injection with the openlineage provider (in the dev
group, as users who want lineage have it), and nothing without it (its import made to fail)."""
from __future__ import annotations

import json
import sys
import types

import pendulum
import pytest

from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
from airflow_paimon.lineage import DatasetRef, dataset_namespace, source_dataset, spark_openlineage_conf

SPEC = TableSpec([("order_id", "BIGINT"), ("dt", "DATE"), ("amount", "DOUBLE"), ("status", "STRING")],
                 primary_keys=["order_id"], partition_keys=["dt"], options={"bucket": "-1"})
FIELDS = (("order_id", "BIGINT NOT NULL"), ("dt", "DATE"), ("amount", "DOUBLE"), ("status", "STRING"))


@pytest.fixture
def table(warehouse, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon",
                                                                  "extra": {"warehouse": warehouse}}))
    return get_or_create_table({"warehouse": warehouse}, "demo.orders", SPEC)


def operators(source):
    from airflow_paimon.operators.compact import PaimonCompactOperator
    from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator, PaimonCommitOperator

    return (PaimonAssignAndWriteOperator(task_id="write", table="demo.orders", source=source),
            PaimonCommitOperator(task_id="commit", table="demo.orders"),
            PaimonCompactOperator(task_id="compact", table="demo.orders"))


def test_namespaces_of_warehouses():
    assert dataset_namespace("/data/wh/") == "file:///data/wh"
    assert dataset_namespace("file:///data/wh") == "file:///data/wh"
    assert dataset_namespace("s3://bucket/warehouse/") == "s3://bucket/warehouse"


@pytest.mark.parametrize("source, expected", [
    ("/in/orders/2026-11-01.parquet", DatasetRef("file", "/in/orders/2026-11-01.parquet")),
    ("file:///in/orders.csv", DatasetRef("file", "/in/orders.csv")),
    ("s3://bucket/in/orders.parquet", DatasetRef("s3://bucket", "in/orders.parquet")),
    ({"path": "gs://bucket/in/x.json", "format": "json"}, DatasetRef("gs://bucket", "in/x.json")),
    ("hdfs://nn:8020/in/x.parquet", DatasetRef("hdfs://nn:8020", "/in/x.parquet")),
    ({"table": "raw.orders"}, DatasetRef("spark", "raw.orders")),
    ({"query": "SELECT * FROM raw.orders"}, None),
])
def test_source_datasets(source, expected):
    assert source_dataset(source) == expected


def test_write_operators_report_source_in_and_table_out_with_its_schema(table, warehouse):
    write, commit, compact = operators("s3://bucket/in/{{ ds }}.parquet")
    write.source = "s3://bucket/in/2026-11-01.parquet"  # rendered
    out = DatasetRef("file://" + warehouse, "demo.orders", FIELDS)
    assert write.lineage_datasets() == ([DatasetRef("s3://bucket", "in/2026-11-01.parquet")], [out])
    assert commit.lineage_datasets() == ([], [out]) == compact.lineage_datasets()
    write.source = {"query": "SELECT 1"}
    assert write.lineage_datasets() == ([], [out])


def test_without_the_provider_there_is_no_lineage(table, monkeypatch):
    monkeypatch.setitem(sys.modules, "airflow.providers.openlineage.extractors", None)  # import fails as if absent
    for op in operators("/in/x.parquet"):
        assert op.get_openlineage_facets_on_complete(None) is None


def test_spark_conf_is_untouched_unless_asked(table):
    conf = {"spark.app.x": "1"}
    assert spark_openlineage_conf(conf, {}, None, None) is conf  # [openlineage] spark_inject_*: off by default
    assert spark_openlineage_conf(conf, {}, False, False) is conf


def test_lineage_with_the_provider(table, warehouse):
    write, commit, _ = operators("/in/orders.parquet")
    lineage = write.get_openlineage_facets_on_complete(None)
    [source], [target] = lineage.inputs, lineage.outputs
    assert (source.namespace, source.name) == ("file", "/in/orders.parquet")
    assert (target.namespace, target.name) == ("file://" + warehouse, "demo.orders")
    assert [(f.name, f.type) for f in target.facets["schema"].fields] == list(FIELDS)
    assert commit.get_openlineage_facets_on_complete(None).inputs == []


def test_spark_submit_gets_the_parent_job_conf_with_the_provider(table, monkeypatch):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    _, commit, _ = operators("/in/x.parquet")
    commit.openlineage_inject_parent_job_info = True
    commands = []
    monkeypatch.setattr(SparkSubmitHook, "submit", lambda self, application, **kw: commands.append(
        self._build_spark_submit_command(application)))
    # the parts of a running task instance the provider's macros read
    dag_run = types.SimpleNamespace(run_id="r", logical_date=pendulum.datetime(2026, 11, 1), clear_number=0, conf={})
    ti = types.SimpleNamespace(dag_id="d", task_id="commit", try_number=1, map_index=-1, run_id="r",
                               dag_run=dag_run, get_template_context=lambda: {"dag_run": dag_run})
    commit._submit({"table": "demo.orders", "catalog_options": {}}, "file:///tmp/result.json",
                   {"ti": ti, "task_instance": ti, "dag_run": ti.dag_run})
    [command] = commands
    confs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    assert any(c.startswith("spark.openlineage.parentJobName=d.commit") for c in confs), confs
