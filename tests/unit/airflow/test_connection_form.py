"""The ``paimon`` connection form: declared in the provider info (``conn-fields``, ``ui-field-behaviour``) the way
Airflow 3.2 reads it without importing the hook, and read back by PaimonHook from the connection's extra."""
from __future__ import annotations

import json
import os
from pathlib import Path

import airflow
import jsonschema
import pytest

from airflow_paimon import PAIMON_CONN_FIELDS, get_provider_info
from airflow_paimon.hooks.paimon import PaimonHook

AIRFLOW = Path(airflow.__file__).parent
FIELDS = ["warehouse", "catalog_options", "index_root", "staging_root"]


def paimon_connection_type() -> dict:
    [conn] = [c for c in get_provider_info()["connection-types"] if c["connection-type"] == "paimon"]
    return conn


def test_provider_info_validates_against_airflows_schemas():
    schema = json.loads((AIRFLOW / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)
    # The runtime schema does not describe the form keys yet; provider.yaml's schema (what Airflow's own
    # providers are checked against) does, strictly (no unknown keys): the connection type must pass it.
    yaml_schema = json.loads((AIRFLOW / "provider.yaml.schema.json").read_text())
    jsonschema.validate(paimon_connection_type(), yaml_schema["properties"]["connection-types"]["items"])
    assert list(paimon_connection_type()["conn-fields"]) == FIELDS


def test_a_wrong_form_field_is_refused_by_that_schema():  # the check above can fail
    yaml_schema = json.loads((AIRFLOW / "provider.yaml.schema.json").read_text())
    broken = {**paimon_connection_type(), "conn-fields": {"warehouse": {"label": "Warehouse"}}}  # no schema
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, yaml_schema["properties"]["connection-types"]["items"])


def test_providers_manager_shows_the_fields_without_the_deprecated_hook_methods():
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    hook_info = ProvidersManagerTaskRuntime().hooks["paimon"]  # what a worker resolves the conn type to
    assert hook_info.hook_class_name == "airflow_paimon.hooks.paimon.PaimonHook"
    # Deprecated since Airflow 3.2 (a warning when the provider info has no form), and never called when it has.
    assert "get_ui_field_behaviour" not in PaimonHook.__dict__
    assert "get_connection_form_widgets" not in PaimonHook.__dict__

    # What the UI's connection form gets from the API.
    [meta] = [m for m in HookMetaService.hook_meta_data() if m.connection_type == "paimon"]
    assert meta.hook_name == "Apache Paimon"
    assert list(meta.extra_fields) == FIELDS
    assert meta.extra_fields["warehouse"]["schema"] == {"type": ["string", "null"], "title": "Warehouse"}
    assert meta.extra_fields["catalog_options"]["schema"]["type"] == ["object", "null"]
    standard = meta.standard_fields
    assert all(getattr(standard, f).hidden for f in ("host", "url_schema", "login", "password", "port"))


def connection(monkeypatch, conn_id: str, **conn) -> PaimonHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "paimon", **conn}))
    return PaimonHook(conn_id)


def test_a_connection_made_with_the_form_fields(monkeypatch, tmp_path):
    warehouse = str(tmp_path / "warehouse")
    options = {"cache-enabled": "false"}
    hook = connection(monkeypatch, "paimon_form", extra={
        "warehouse": warehouse, "catalog_options": options, "index_root": str(tmp_path / "idx"),
        "staging_root": str(tmp_path / "stage")})
    assert hook.catalog_options() == {"warehouse": warehouse, **options}
    assert (hook.index_root(), hook.staging_root()) == (str(tmp_path / "idx"), str(tmp_path / "stage"))
    assert hook.results_root() == f"{warehouse}/.airflow-paimon/results"
    ok, message = hook.test_connection()  # a warehouse that does not exist is a failure, never created by a test
    assert not ok and f"warehouse {warehouse} does not exist" in message, message
    assert not (tmp_path / "warehouse").exists()
    (tmp_path / "warehouse").mkdir()
    ok, message = hook.test_connection()  # the catalog really opens on these options
    assert ok, message


def test_form_fields_left_empty_take_the_defaults(monkeypatch):
    hook = connection(monkeypatch, "paimon_empty", extra={
        "warehouse": "/data/wh", "catalog_options": None, "index_root": "", "staging_root": None})
    assert hook.catalog_options() == {"warehouse": "/data/wh"}
    assert (hook.index_root(), hook.staging_root()) == ("/data/wh/.airflow-paimon/index",
                                                        "/data/wh/.airflow-paimon/staging")


def test_connections_made_before_the_form_still_work(monkeypatch):
    host_only = connection(monkeypatch, "paimon_host", host="/data/wh",
                           extra={"catalog_options": {"a": "1"}, "index_root": "/idx"})
    assert host_only.catalog_options() == {"warehouse": "/data/wh", "a": "1"}
    assert host_only.index_root() == "/idx"
    # Airflow 2's forms stored the fields prefixed; catalog options as JSON text.
    prefixed = connection(monkeypatch, "paimon_prefixed", extra={
        "extra__paimon__warehouse": "s3://b/wh", "extra__paimon__catalog_options": '{"fs.s3.endpoint": "http://x"}',
        "extra__paimon__staging_root": "s3://b/stage"})
    assert prefixed.catalog_options() == {"warehouse": "s3://b/wh", "fs.s3.endpoint": "http://x"}
    assert prefixed.staging_root() == "s3://b/stage"
    # The field wins over host.
    assert connection(monkeypatch, "paimon_both", host="/old", extra={"warehouse": "/new"}).warehouse == "/new"


@pytest.mark.parametrize("extra, message", [
    ({}, "set the warehouse"),
    ({"warehouse": "/wh", "catalog_options": "{not json"}, "catalog_options is not JSON"),
    ({"warehouse": "/wh", "catalog_options": ["a"]}, "catalog_options must be a JSON object"),
])
def test_bad_connection_fields_are_named(monkeypatch, extra, message):
    hook = connection(monkeypatch, "paimon_bad", extra=extra)
    with pytest.raises(ValueError, match=message) as raised:
        hook.catalog_options()
    assert "paimon_bad" in str(raised.value)


def test_the_form_declares_exactly_what_the_hook_reads():
    assert list(PAIMON_CONN_FIELDS) == FIELDS


def test_templated_arguments_render_and_are_checked():
    """Connection ids, the declared schema, shards, source options and shuffle partitions are templated; counts
    rendered as text are checked where the spec is built."""
    from airflow_paimon.engine.errors import ValidationError
    from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                                 templated_count)

    boot = PaimonBootstrapIndexOperator(task_id="b", table="db.t", shards="{{ params.n }}",
                                        table_schema="{{ params.schema }}", paimon_conn_id="{{ params.conn }}")
    assert {"shards", "table_schema", "paimon_conn_id", "spark_conn_id", "shuffle_partitions"} <= set(
        boot.template_fields)
    write = PaimonAssignAndWriteOperator(task_id="w", table="db.t", source="/x", source_options="{{ params.o }}")
    assert "source_options" in write.template_fields
    assert write.template_fields_renderers["source_options"] == boot.template_fields_renderers["table_schema"] == "json"
    assert templated_count("db.t", "shards", "3") == 3 and templated_count("db.t", "shards", "None") is None
    for bad in ("0", "x", "-2"):
        with pytest.raises(ValidationError, match=r"table db\.t, value '.*': shards must be"):
            templated_count("db.t", "shards", bad)


@pytest.mark.slow
def test_the_sensor_defers_by_default_where_airflow_says_so():
    """``deferrable`` defaults to ``[operators] default_deferrable``, as Airflow's own sensors."""
    import subprocess
    import sys

    code = ("from airflow_paimon.sensors.paimon import PaimonSnapshotSensor as S; "
            "print(S(task_id='s', table='db.t').deferrable)")
    for setting, expected in (("True", "True"), ("False", "False")):
        env = {**os.environ, "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": setting}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert done.stdout.strip().splitlines()[-1] == expected
