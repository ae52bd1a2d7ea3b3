"""The FastAPI app the plugin mounts under ``/paimon``: an overview and one page per table. What a page shows
of a table is read on the job side (ui/steps.py: in the api-server's process when it holds pypaimon, else
in the job environment: the ``spark_default`` connection's extra ``job_python``, else ``[paimon] job_python``,
airflow_paimon/job_env), each connection's reads bounded by READ_TIMEOUT.

Every request needs an Airflow user (the ``_token`` cookie the UI sets, or a bearer token), as the rest
of the UI does. A table is only ever opened by a name the catalog listed, so a path in the URL never
reaches storage."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from airflow_paimon.links import PAGE_PREFIX as URL_PREFIX
from airflow_paimon.links import TABLE_QUERY, UI_ROUTE
from airflow_paimon.job_env import DEFAULT_SPARK_CONN_ID, JobEnv, resolve_job_env
from airflow_paimon.job_env.step import run_step
from airflow_paimon.ui import render, steps
from airflow_paimon.ui.connections import paimon_hooks
from airflow_paimon.ui.runs import recent_runs

# An unreachable object store must not hold the page for minutes (an S3 client's retries took 105 s).
READ_TIMEOUT = 20.0


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


def table_asked_by_ui(request: Request) -> tuple[str, str] | None:
    """(conn_id, table) when the UI's plugin page that framed this request was opened by a task's extra link
    (``/plugin/paimon?conn_id=..&table=..``): the iframe's request names it as its Referer. Links followed
    inside the frame have the app's own pages as Referer, so the overview stays reachable."""
    referer = urlparse(request.headers.get("referer", ""))
    if not referer.path.endswith(f"/plugin/{UI_ROUTE}"):
        return None
    query = parse_qs(referer.query)
    conn_id, table = (query.get(name, [""])[0] for name in TABLE_QUERY)
    return (conn_id, table) if conn_id and table else None


def job_env() -> JobEnv:
    """Where the page's reads run: a Paimon connection names no Spark connection, so ``spark_default``'s extra
    ``job_python`` (none need exist), else ``[paimon] job_python``, else this interpreter."""
    return resolve_job_env(None, DEFAULT_SPARK_CONN_ID)


@app.get("/", response_class=HTMLResponse)
def overview(request: Request):
    asked = table_asked_by_ui(request)
    if asked:  # the table's page validates the names as it always does
        return RedirectResponse(render.table_url(*asked, URL_PREFIX), status_code=303)
    connections = []
    for conn_id, hook in paimon_hooks().items():
        entry = {"conn_id": conn_id, "warehouse": "", "tables": []}
        try:
            entry["warehouse"] = hook.warehouse
            entry["tables"] = run_step(steps.table_summaries, job_env(), timeout=READ_TIMEOUT,
                                       catalog_options=hook.catalog_options())
        except Exception as e:  # noqa: BLE001 - one unreachable warehouse must not hide the others
            entry["error"] = f"{type(e).__name__}: {e}"
        connections.append(entry)
    return render.overview(connections, URL_PREFIX)


@app.get("/tables/{conn_id}/{identifier}", response_class=HTMLResponse)
def table(conn_id: str, identifier: str) -> str:
    hook = paimon_hooks().get(conn_id)
    if hook is None:
        raise HTTPException(status_code=404, detail=f"no paimon connection {conn_id!r}")
    html = run_step(steps.table_page, job_env(), timeout=READ_TIMEOUT, catalog_options=hook.catalog_options(),
                    index_root=hook.index_root(), staging_root=hook.staging_root(), conn_id=conn_id,
                    identifier=identifier, runs=recent_runs(), prefix=URL_PREFIX)
    if html is None:
        raise HTTPException(status_code=404, detail=f"connection {conn_id!r} has no table {identifier!r}")
    return html
