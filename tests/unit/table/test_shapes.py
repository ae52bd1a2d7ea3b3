"""engine/assign/shapes.py: one TableShape per bucket mode, read from real pypaimon tables; its refusals fail the task
without retries through the job frame and the operator; the Paimon page shows the shape the engine writes."""
from __future__ import annotations

import json

import pendulum
import pyarrow as pa
import pytest
from airflow.models.connection import Connection
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from pypaimon import CatalogFactory, Schema

from airflow_paimon.engine.assign.dynamic import check_dynamic_table
from airflow_paimon.engine.assign.fixed import check_fixed_table
from airflow_paimon.engine.assign.shapes import (APPEND, CROSS_PARTITION, HASH_DYNAMIC, HASH_FIXED, POSTPONE, SHAPES,
                                          shape_of)
from airflow_paimon.engine.jobs.specs import ExpireResult, ExpireSpec
from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator
from airflow_paimon.spark.job_frame import JobRun, execute_job
from airflow_paimon.ui import render
from airflow_paimon.ui.connections import _LoadedHook
from airflow_paimon.ui.tables import table_summary, table_view

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), pa.field("v", pa.int64())])
# name -> (primary key, bucket, the shape the engine writes it as, pypaimon's own bucket_mode() name)
TABLES = {"cross": (["id"], "-1", CROSS_PARTITION, "CROSS_PARTITION"),
          "dynamic": (["id", "dt"], "-1", HASH_DYNAMIC, "HASH_DYNAMIC"),
          "fixed": (["id", "dt"], "3", HASH_FIXED, "HASH_FIXED"),
          "postpone": (["id", "dt"], "-2", POSTPONE, "POSTPONE_MODE"),
          "log": ([], "-1", APPEND, "BUCKET_UNAWARE"),
          "log_bucketed": ([], "2", APPEND, "HASH_FIXED")}  # pypaimon's writer writes it: append for the engine


@pytest.fixture
def tables(warehouse):
    """Every shape as a real table, partitioned by dt (created through pypaimon: bucket -2 is refused by ours)."""
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    for name, (keys, bucket, _, _) in TABLES.items():
        catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
            SCHEMA, partition_keys=["dt"], primary_keys=keys, options={"bucket": bucket}), False)
    return {name: catalog.get_table(f"db.{name}") for name in TABLES}


def test_each_table_has_its_shape_with_paimons_names(tables):
    for name, (_, _, shape, paimon_mode) in TABLES.items():
        assert shape_of(tables[name]) is shape, name
        assert tables[name].bucket_mode().name == paimon_mode  # the same name where the engine writes it so
    assert [s.name for s in SHAPES.values()] == ["CROSS_PARTITION", "HASH_DYNAMIC", "HASH_FIXED", "APPEND",
                                                 "POSTPONE_MODE"]
    assert [s.name for s in SHAPES.values() if s.needs_index] == ["CROSS_PARTITION"]
    assert [s.name for s in SHAPES.values() if "overwrite" in s.write_modes] == ["CROSS_PARTITION", "HASH_FIXED"]


def test_every_writable_shape_has_a_spark_pipeline():
    from airflow_paimon.spark.pipelines import PIPELINES

    assert set(PIPELINES) == {s.name for s in SHAPES.values() if s is not POSTPONE}


# A shape's check refusing a table (the writer of one shape handed a table of another, or a shape not written
# here): what the job frame reports and the operator raises.
REFUSALS = [(check_fixed_table, "dynamic", r"table db\.dynamic, option 'bucket', value -1: a fixed-bucket write "
                                           r"needs bucket > 0"),
            (check_dynamic_table, "cross", r"table db\.cross: the primary key lacks partition fields \['dt'\]"),
            (check_dynamic_table, "fixed", r"table db\.fixed, option 'bucket', value '3': a dynamic-bucket write"),
            (check_dynamic_table, "log", r"table db\.log: bucket = -1 without a primary key is an append"),
            (POSTPONE.check, "postpone", r"table db\.postpone: bucket mode POSTPONE_MODE is not supported")]


@pytest.mark.parametrize("check,name,message", REFUSALS, ids=[f"{c.__name__}-{n}" for c, n, _ in REFUSALS])
def test_a_shape_refusal_fails_the_task_without_retries(tmp_path, tables, check, name, message):
    result_uri = str(tmp_path / "result.json")

    def job(spec):
        check(tables[name])
        return ExpireResult.from_dict({})

    spec = {"catalog_options": {"warehouse": str(tmp_path / "warehouse")}, "table": f"db.{name}"}
    assert execute_job(job, ExpireSpec, spec, JobRun(result_uri)) is False
    assert json.loads((tmp_path / "result.json").read_text())["error"].startswith("ValidationError: ")
    with DAG("d", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        write = PaimonAssignAndWriteOperator(task_id="write", table=f"db.{name}", source="/in.parquet")
    with pytest.raises(AirflowException, match=message) as raised:
        write._job_failed(result_uri, "spark-submit exited with 1")
    assert raised.type is AirflowFailException  # a retry would refuse the same table again


def test_the_paimon_page_shows_the_shape_the_engine_writes(tables, warehouse):
    hook = _LoadedHook(Connection(conn_id="p", conn_type="paimon", extra=json.dumps({"warehouse": warehouse})))
    for name, (_, _, shape, _) in TABLES.items():
        assert table_summary(hook, f"db.{name}")["bucket_mode"] == shape.name, name
    view = table_view(hook, "p", "db.log_bucketed", {})
    assert view.bucket_mode == "APPEND"
    html = render.table_page(view, "/paimon")
    assert "APPEND · merge engine" in html and "HASH_FIXED" not in html
