"""Operator extra link: from a Paimon task to its table's page inside the Airflow UI (the plugin's page in the
navigation, ``/plugin/paimon``, which opens the table named in its query)."""
from __future__ import annotations

from urllib.parse import urlencode

from airflow.sdk import BaseOperatorLink

PAGE_PREFIX = "/paimon"  # where airflow_paimon.ui mounts its app
UI_ROUTE = "paimon"  # the plugin's page in the Airflow UI: /plugin/<UI_ROUTE>, the app in an iframe
TABLE_QUERY = ("conn_id", "table")  # what that page's query names: the table the iframe opens


def ui_table_link(conn_id: str, table: str) -> str:
    return f"/plugin/{UI_ROUTE}?{urlencode(dict(zip(TABLE_QUERY, (conn_id, table))))}"


class PaimonTableLink(BaseOperatorLink):
    name = "Paimon table"

    def get_link(self, operator, *, ti_key) -> str:
        return ui_table_link(operator.paimon_conn_id, str(operator.table))
