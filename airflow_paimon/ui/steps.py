"""The Paimon page's reads, as job-side steps (job_env/step.py): run in the api-server's process when it holds
pypaimon, else in the job environment. The app (ui/app.py) names them; what they read is ui/tables.py's."""
from __future__ import annotations

from airflow_paimon.job_env.step import job_step


@job_step
def table_summaries(catalog_options: dict) -> list[dict]:
    """The Paimon page's overview of one connection: a line per table."""
    from airflow_paimon.engine.table.catalog import require_warehouse
    from airflow_paimon.ui.tables import list_tables, table_summary

    require_warehouse(catalog_options)  # else a missing warehouse would show as one without tables
    hook = _Roots(catalog_options)
    return [table_summary(hook, t) for t in list_tables(catalog_options)]


@job_step
def table_page(catalog_options: dict, index_root: str, staging_root: str, conn_id: str, identifier: str,
               runs: list, prefix: str, airflow_prefix: str = "") -> str | None:
    """The Paimon page of one table, as HTML; None when the catalog lists no such table (a path in the URL
    never reaches storage). ``prefix``: the app's path; ``airflow_prefix``: Airflow's (its DAG run links)."""
    from airflow_paimon.engine.table.catalog import require_warehouse
    from airflow_paimon.ui import render
    from airflow_paimon.ui.runs import runs_by_commit_user
    from airflow_paimon.ui.tables import list_tables, table_view

    require_warehouse(catalog_options)
    if identifier not in list_tables(catalog_options):
        return None
    view = table_view(_Roots(catalog_options, index_root, staging_root), conn_id, identifier,
                      runs_by_commit_user(identifier, [tuple(r) for r in runs]))
    return render.table_page(view, prefix, airflow_prefix)


class _Roots:
    """What ui/tables.py asks of a PaimonHook, from the values the Airflow side read from the connection."""

    def __init__(self, catalog_options: dict, index_root: str = "", staging_root: str = ""):
        self._options, self._index_root, self._staging_root = catalog_options, index_root, staging_root

    def catalog_options(self) -> dict:
        return self._options

    def index_root(self) -> str:
        return self._index_root

    def staging_root(self) -> str:
        return self._staging_root
