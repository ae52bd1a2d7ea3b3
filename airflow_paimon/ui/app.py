"""The FastAPI app the plugin mounts under ``/paimon``: an overview and one page per table.

Every request needs an Airflow user (the ``_token`` cookie the UI sets, or a bearer token), as the rest
of the UI does. A table is only ever opened by a name the catalog listed, so a path in the URL never
reaches storage."""
from __future__ import annotations

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse

from airflow_paimon.links import PAGE_PREFIX as URL_PREFIX
from airflow_paimon.ui import render
from airflow_paimon.ui.connections import paimon_hooks
from airflow_paimon.ui.runs import recent_runs, runs_by_commit_user
from airflow_paimon.ui.tables import list_tables, table_summary, table_view


async def require_user(request: Request):
    """The Airflow user of the request (401/403 otherwise), allowed to see the Airflow website."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user, oauth2_scheme

    user = await get_user(request, await oauth2_scheme(request), await bearer_scheme(request))
    if not get_auth_manager().is_authorized_view(access_view=AccessView.WEBSITE, user=user):
        raise HTTPException(status_code=403, detail="Forbidden")
    return user


app = FastAPI(title="Paimon", dependencies=[Depends(require_user)], docs_url=None, redoc_url=None,
              openapi_url=None)


@app.get("/", response_class=HTMLResponse)
def overview() -> str:
    connections = []
    for conn_id, hook in paimon_hooks().items():
        entry = {"conn_id": conn_id, "warehouse": "", "tables": []}
        try:
            entry["warehouse"] = hook.warehouse
            entry["tables"] = [table_summary(hook, t) for t in list_tables(hook.catalog_options())]
        except Exception as e:  # one unreachable warehouse must not hide the others
            entry["error"] = f"{type(e).__name__}: {e}"
        connections.append(entry)
    return render.overview(connections, URL_PREFIX)


@app.get("/tables/{conn_id}/{identifier}", response_class=HTMLResponse)
def table(conn_id: str, identifier: str) -> str:
    hook = paimon_hooks().get(conn_id)
    if hook is None:
        raise HTTPException(status_code=404, detail=f"no paimon connection {conn_id!r}")
    if identifier not in list_tables(hook.catalog_options()):
        raise HTTPException(status_code=404, detail=f"connection {conn_id!r} has no table {identifier!r}")
    view = table_view(hook, conn_id, identifier, runs_by_commit_user(identifier, recent_runs()))
    return render.table_page(view, URL_PREFIX)
