"""Operator extra link: from a Paimon task to its table's page inside the Airflow UI (the plugin's page in the
navigation, ``/plugin/paimon``, which opens the table named in its query).

Airflow served under a path (``[api] base_url = http://host/airflow``) serves everything under it: the
api-server's root_path is that path (airflow/api_fastapi/app.py), so the UI, the plugin's page and the app's
own pages all carry it; ``airflow_root`` is what every URL here is prefixed with."""
from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from airflow.sdk import BaseOperatorLink

PAGE_PREFIX = "/paimon"  # where airflow_paimon.ui mounts its app
UI_ROUTE = "paimon"  # the plugin's page in the Airflow UI: /plugin/<UI_ROUTE>, the app in an iframe
TABLE_QUERY = ("conn_id", "table")  # what that page's query names: the table the iframe opens


def airflow_root() -> str:
    """The path Airflow is served under, as the api-server takes it: ``[api] base_url``'s path without its
    trailing slash (``/airflow``; ``""`` when it has none or is unset)."""
    from airflow.configuration import conf

    return urlsplit(conf.get("api", "base_url", fallback="") or "").path.rstrip("/")


def page_root() -> str:
    """Where the api-server serves the app: ``<airflow_root>/paimon``."""
    return airflow_root() + PAGE_PREFIX


def ui_table_link(conn_id: str, table: str) -> str:
    """The table's page inside the Airflow UI, under Airflow's path: ``<airflow_root>/plugin/paimon?conn_id=..``."""
    return f"{airflow_root()}/plugin/{UI_ROUTE}?{urlencode(dict(zip(TABLE_QUERY, (conn_id, table))))}"


class PaimonTableLink(BaseOperatorLink):
    name = "Paimon table"

    def get_link(self, operator, *, ti_key) -> str:
        return ui_table_link(operator.paimon_conn_id, str(operator.table))
