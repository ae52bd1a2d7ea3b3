"""The path Airflow is served under (``[api] base_url``'s) in every URL of the Paimon page and its extra link."""
from __future__ import annotations

import pytest

from airflow_paimon.links import airflow_root, page_root, ui_table_link
from airflow_paimon.ui import render


@pytest.mark.parametrize(("base_url", "root"), [
    ("http://127.0.0.1:8080", ""), ("http://127.0.0.1:8080/", ""), ("", ""),
    ("http://host:8080/airflow", "/airflow"), ("https://host/org/airflow/", "/org/airflow")])
def test_links_carry_the_path_of_base_url(monkeypatch, base_url, root):
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", base_url)
    assert airflow_root() == root and page_root() == f"{root}/paimon"
    link = ui_table_link("paimon_default", "demo.orders")
    assert link == f"{root}/plugin/paimon?conn_id=paimon_default&table=demo.orders"
    html = render.overview([{"conn_id": "paimon_default", "warehouse": "/wh", "tables": [
        {"identifier": "demo.orders", "bucket_mode": "HASH_FIXED", "snapshot_id": 1, "commit_kind": "APPEND",
         "records": 3}]}], page_root())
    assert f"href='{root}/paimon/tables/paimon_default/demo.orders'" in html
    assert f"href='{root}/paimon/'" in render.read_failed("paimon_default", "demo.orders", "failed", page_root())
    run_link = render._run_link(("d", "r/1", 0), airflow_root())
    assert run_link.startswith(f"<a target='_top' href='{root}/dags/d/runs/r%2F1'")
