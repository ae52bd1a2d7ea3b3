"""The paimon:// asset URI scheme (normal form, bad URIs, factory, provider registration, OpenLineage
conversion) and the asset events of commit and compaction, on real tables written in-process."""
from __future__ import annotations

import json
import urllib.parse

import pyarrow as pa
import pytest
from airflow.sdk import Asset, AssetAlias

from airflow_paimon.assets import paimon_asset, sanitize_uri, table_of
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, stage_run

URI = "paimon://paimon_default/demo/orders"


def sanitized(uri: str) -> str:
    return urllib.parse.urlunsplit(sanitize_uri(urllib.parse.urlsplit(uri)))


@pytest.mark.parametrize("spelling", [URI, "PAIMON://paimon_default/demo/orders", URI + "/", URI + "//",
                                      "Paimon://paimon_default/demo/orders/"])
def test_spellings_of_one_table_normalise_to_one_uri(spelling):
    assert Asset(uri=spelling).uri == URI  # through Airflow: the provider's handler is registered
    assert sanitized(spelling.rstrip("/") if spelling.endswith("//") else spelling) == URI


def test_case_of_connection_and_table_is_kept():
    assert Asset(uri="paimon://Paimon_Prod/Sales/Orders-2026").uri == "paimon://Paimon_Prod/Sales/Orders-2026"


@pytest.mark.parametrize("uri, problem", [
    ("paimon://c/demo/orders?snapshot=3", "a query is not part"),
    ("paimon://c/demo", "exactly /<database>/<table>"),
    ("paimon://c/demo/orders/extra", "exactly /<database>/<table>"),
    ("paimon://c", "exactly /<database>/<table>"),
    ("paimon:///demo/orders", "the authority must be a paimon connection id"),
    ("paimon://user@c/demo/orders", "user, password or port"),
    ("paimon://c:8080/demo/orders", "user, password or port"),
    ("paimon://c/../orders", "invalid table identifier"),
    ("paimon://c/de.mo/orders", "invalid table identifier"),
    ("paimon://c/demo/orders$snapshots", "branch and system-table suffixes"),
    ("paimon://c/demo/or%2Fders", "percent-encoding is not used"),
    ("paimon://c//orders", "invalid table identifier"),
])
def test_bad_uris_are_refused_naming_the_uri(uri, problem):
    with pytest.raises(ValueError, match=problem) as err:
        Asset(uri=uri)
    assert "expected paimon://<paimon_conn_id>/<database>/<table>" in str(err.value)
    assert uri.split("?")[0].split("/")[2] in str(err.value)


def test_a_fragment_is_refused_by_the_handler_and_dropped_by_airflow():
    with pytest.raises(ValueError, match="a fragment is not part"):
        sanitized(URI + "#snap")
    assert Asset(uri=URI + "#snap").uri == URI  # Airflow removes fragments before any scheme handler


def test_factory_builds_the_normal_form_with_a_matching_name():
    asset = paimon_asset("demo.orders")
    assert (asset.uri, asset.name) == (URI, URI)
    assert asset == paimon_asset("demo.orders", "paimon_default")
    assert paimon_asset("demo.orders", "wh2").uri == "paimon://wh2/demo/orders"
    assert table_of(asset) == ("paimon_default", "demo.orders") == table_of(URI)
    with pytest.raises(ValueError, match=r"paimon asset of connection 'paimon_default'.*demo.orders/\.\."):
        paimon_asset("demo.orders/..")
    with pytest.raises(ValueError, match="connection id"):
        paimon_asset("demo.orders", "bad conn")


def test_the_scheme_is_registered_in_the_provider_info():
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    import airflow_paimon.assets as assets

    manager = ProvidersManagerTaskRuntime()
    assert manager.asset_uri_handlers["paimon"] is assets.sanitize_uri
    assert manager.asset_factories["paimon"] is assets.paimon_asset
    assert manager.asset_to_openlineage_converters["paimon"] is assets.convert_asset_to_openlineage


def test_openlineage_conversion(warehouse, monkeypatch):
    from airflow_paimon.assets import convert_asset_to_openlineage

    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon",
                                                                  "extra": {"warehouse": warehouse}}))
    dataset = convert_asset_to_openlineage(paimon_asset("demo.orders"), None)
    assert (dataset.namespace, dataset.name) == ("file://" + warehouse, "demo.orders")
    dataset = convert_asset_to_openlineage(paimon_asset("demo.orders", "no_such_conn"), None)
    assert (dataset.namespace, dataset.name) == ("paimon://no_such_conn", "demo.orders")


# --- asset events of commit and compaction ---------------------------------------------------------------------

SPEC = TableSpec([("id", "BIGINT"), ("dt", "STRING"), ("v", "DOUBLE")], primary_keys=["id"], partition_keys=["dt"],
                 options={"bucket": "-1"})


@pytest.fixture
def connection(warehouse, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon",
                                                                  "extra": {"warehouse": warehouse}}))
    return {"warehouse": warehouse}


def rows(ids, dt="a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "v": [float(i) for i in ids]})


def context():
    from airflow.sdk.execution_time.context import OutletEventAccessors

    return {"outlet_events": OutletEventAccessors()}


def test_commit_declares_the_table_asset_unless_templated_or_disabled():
    from airflow_paimon.operators.compact import PaimonCompactOperator
    from airflow_paimon.operators.paimon import PaimonCommitOperator

    mine = Asset(uri="s3://bucket/report")
    assert PaimonCommitOperator(task_id="c", table="demo.orders", outlets=[mine]).outlets == [
        mine, paimon_asset("demo.orders")]
    assert PaimonCompactOperator(task_id="k", table="demo.orders", paimon_conn_id="wh2").outlets == [
        paimon_asset("demo.orders", "wh2")]
    assert PaimonCommitOperator(task_id="c", table="{{ params.table }}").outlets == []
    assert PaimonCommitOperator(task_id="c", table="demo.orders", emit_asset=False).outlets == []


def test_commit_event_carries_the_snapshot_and_a_retry_the_same_one(connection, warehouse):
    from airflow_paimon.operators.paimon import PaimonCommitOperator

    get_or_create_table(connection, "db.t", SPEC)
    ctx = bootstrap(connection, "db.t", warehouse + "/.index", 2)
    run_commit(stage_run(ctx, rows([1, 2, 3]), run_id="r0"))
    spec = stage_run(bootstrap(connection, "db.t", warehouse + "/.index", 2), rows([3, 4], "b"), run_id="r1")
    first, retry = run_commit(spec), run_commit(spec)
    assert (first.snapshot_id, retry.snapshot_id, retry.already_committed) == (2, 2, True)
    asset = paimon_asset("db.t")
    for committed in (first, retry):
        op, ctx_ = PaimonCommitOperator(task_id="commit", table="db.t"), context()
        extra = op.record_snapshot(ctx_, committed.snapshot_id, committed.base_snapshot_id,
                                   new=committed.snapshot_id != committed.base_snapshot_id)
        assert ctx_["outlet_events"][asset].extra == extra == {
            "snapshot_id": 2, "base_snapshot_id": 1, "commit_kind": "APPEND", "delta_record_count": 3,
            "total_record_count": 6}  # id 3 moved a -> b: a delete in a plus two adds
        assert op.outlets == [asset]
    snapshot = get_table(connection, "db.t").snapshot_manager().get_snapshot_by_id(2)
    assert (snapshot.delta_record_count, snapshot.total_record_count) == (3, 6)


def test_no_new_snapshot_withdraws_the_outlet(connection):
    from airflow_paimon.operators.compact import PaimonCompactOperator

    get_or_create_table(connection, "db.t", SPEC)
    op, ctx_ = PaimonCompactOperator(task_id="compact", table="db.t"), context()
    mine = Asset(uri="s3://bucket/report")
    op.outlets = [mine, *op.outlets]
    original = op.outlets
    assert op.record_snapshot(ctx_, 4, 4, new=False) is None
    assert op.outlets == [mine]  # the success message then names no paimon outlet: no event
    assert original == [mine, paimon_asset("db.t")]  # the DAG's operator (prepare_for_execution shares the list)
    assert len(ctx_["outlet_events"]) == 0


def test_a_templated_table_emits_through_an_alias(connection, warehouse):
    from airflow_paimon.operators.paimon import PaimonCommitOperator

    get_or_create_table(connection, "db.t", SPEC)
    run_commit(stage_run(bootstrap(connection, "db.t", warehouse + "/.index", 2), rows([1, 2])))
    alias = AssetAlias("paimon-writes")
    op = PaimonCommitOperator(task_id="commit", table="{{ params.table }}", outlets=[alias])
    op.table = "db.t"  # as rendered
    ctx_ = context()
    extra = op.record_snapshot(ctx_, 1, None, new=True)
    [event] = ctx_["outlet_events"][alias].asset_alias_events
    assert (event.dest_asset_key.uri, event.extra) == (paimon_asset("db.t").uri, extra)
    assert extra["snapshot_id"] == 1 and extra["commit_kind"] == "APPEND" and extra["total_record_count"] == 2


def test_no_event_without_a_declared_asset_or_alias_and_none_for_an_expired_snapshot(connection, warehouse):
    from airflow_paimon.assets import snapshot_event_extra
    from airflow_paimon.operators.paimon import PaimonCommitOperator

    table = get_or_create_table(connection, "db.t", SPEC)
    run_commit(stage_run(bootstrap(connection, "db.t", warehouse + "/.index", 2), rows([1])))
    op = PaimonCommitOperator(task_id="commit", table="{{ params.table }}")
    op.table = "db.t"
    ctx_ = context()
    assert op.record_snapshot(ctx_, 1, None, new=True) is None and len(ctx_["outlet_events"]) == 0
    assert snapshot_event_extra(table, 7, 1) == {"snapshot_id": 7, "base_snapshot_id": 1, "commit_kind": None,
                                                 "delta_record_count": None, "total_record_count": None}
