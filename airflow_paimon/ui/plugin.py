"""The Airflow 3 plugin: mounts the Paimon app and puts a "Paimon" entry in the UI's navigation."""
from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_paimon.links import UI_ROUTE, PaimonTableLink
from airflow_paimon.ui.app import URL_PREFIX, app


class PaimonPlugin(AirflowPlugin):
    name = "paimon"
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "Paimon tables"}]
    # Shown inside the Airflow UI (iframe) at /plugin/paimon, in the top-level navigation; a task's extra link
    # opens it with a table in its query (links.py), and the app's overview follows that (app.py).
    external_views = [{"name": "Paimon", "href": f"{URL_PREFIX}/", "destination": "nav", "url_route": UI_ROUTE,
                       "nav_top_level": True}]
    operator_extra_links = [PaimonTableLink()]
