"""The Airflow 3 plugin: mounts the Paimon app and puts a "Paimon" entry in the UI's navigation."""
from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_paimon.links import PAGE_PREFIX, UI_ROUTE, PaimonTableLink, page_root
from airflow_paimon.ui.app import app


class PaimonPlugin(AirflowPlugin):
    name = "paimon"
    fastapi_apps = [{"app": app, "url_prefix": PAGE_PREFIX, "name": "Paimon tables"}]
    # Shown inside the Airflow UI (iframe) at /plugin/paimon, in the top-level navigation; a task's extra link
    # opens it with a table in its query (links.py), and the app's overview follows that (app.py). The iframe's
    # src is href as given, so it carries the path Airflow is served under ([api] base_url's, links.py).
    external_views = [{"name": "Paimon", "href": f"{page_root()}/", "destination": "nav", "url_route": UI_ROUTE,
                       "nav_top_level": True}]
    operator_extra_links = [PaimonTableLink()]
