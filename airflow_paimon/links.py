"""Operator extra link: from a Paimon task to its table's page in the Airflow UI."""
from __future__ import annotations

from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

PAGE_PREFIX = "/paimon"  # where airflow_paimon.ui mounts its app


class PaimonTableLink(BaseOperatorLink):
    name = "Paimon table"

    def get_link(self, operator, *, ti_key) -> str:
        return (f"{PAGE_PREFIX}/tables/{quote(operator.paimon_conn_id, safe='')}/"
                f"{quote(str(operator.table), safe='.')}")
