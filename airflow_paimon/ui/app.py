"""The FastAPI app the plugin mounts under ``/paimon`` (``<path>/paimon`` when ``[api] base_url`` has a path: every
link it renders carries that path, links.py): an overview and one page per table. What a page shows
of a table is read on the job side (ui/steps.py: in the api-server's process when it holds pypaimon, else
in the job environment: the ``spark_default`` connection's extra ``job_python``, else ``[paimon] job_python``,
airflow_paimon/job_env). Each read is bounded by ``[paimon] ui_read_timeout`` (default 5 s) and a timeout is
shown as one, naming the warehouse and its endpoint; the overview reads its connections at once (at most
MAX_READERS), so a slow store costs the page one timeout, and keeps each connection's result for CACHE_SECONDS.

Every request needs an Airflow user (the ``_token`` cookie the UI sets, or a bearer token), as the rest
of the UI does. A table is only ever opened by a name the catalog listed, so a path in the URL never
reaches storage."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import parse_qs, urlparse

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.links import TABLE_QUERY, UI_ROUTE, airflow_root, page_root
from airflow_paimon.job_env import DEFAULT_SPARK_CONN_ID, JobEnv, config_seconds, resolve_job_env
from airflow_paimon.job_env.step import run_step
from airflow_paimon.ui import render, steps
from airflow_paimon.ui.connections import paimon_hooks
from airflow_paimon.ui.runs import recent_runs

MAX_READERS = 8  # connections the overview reads at once
CACHE_SECONDS = 30.0  # a connection's overview read (tables or error) is shown again for this long after it ended


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


def read_timeout() -> float:
    """Seconds one read of a warehouse may take: ``[paimon] ui_read_timeout`` (default 5)."""
    return config_seconds("ui_read_timeout")


def read_failure(hook: PaimonHook, error: Exception, timeout: float) -> str:
    """A failed read, in words: a timeout names the warehouse and its endpoint."""
    if isinstance(error, TimeoutError):
        return hook.timed_out(timeout)
    return f"{type(error).__name__}: {error}"


class _Read:
    """One connection's overview read, shared by the requests that come while it runs and for CACHE_SECONDS after."""

    def __init__(self) -> None:
        self.future: Future[dict] = Future()
        self.ended: float | None = None  # time.monotonic() when it ended

    def fresh(self, now: float) -> bool:
        return self.ended is None or now - self.ended < CACHE_SECONDS


class _Reads:
    """The overview's reads: each connection's on a thread of a bounded pool, one read per (connection, options,
    job environment, timeout) at a time, its result kept for CACHE_SECONDS (a reload does not pay again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads: dict[tuple, _Read] = {}
        self._pool: ThreadPoolExecutor | None = None

    def clear(self) -> None:
        with self._lock:
            self._reads.clear()

    def entry(self, conn_id: str, hook: PaimonHook, env: JobEnv, timeout: float) -> Future[dict]:
        """The overview's entry of connection ``conn_id``: a future of {"tables": [...]} or {"error": "..."}."""
        key = (conn_id, json.dumps(hook.catalog_options(), sort_keys=True, default=str), env, timeout)
        now = time.monotonic()
        with self._lock:
            for k in [k for k, r in self._reads.items() if not r.fresh(now)]:
                del self._reads[k]
            read = self._reads.get(key)
            if read is not None:
                return read.future
            read = self._reads[key] = _Read()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(MAX_READERS, thread_name_prefix="paimon-page")
            pool = self._pool
        try:
            pool.submit(self._run, read, hook, env, timeout)
        except RuntimeError:  # the pool is shut down (the interpreter is exiting): no read to wait for
            with self._lock:
                self._reads.pop(key, None)
            raise
        return read.future

    @staticmethod
    def _run(read: _Read, hook: PaimonHook, env: JobEnv, timeout: float) -> None:
        entry: dict = {"error": "the read ended without a result"}
        try:
            entry = {"tables": run_step(steps.table_summaries, env, timeout=timeout,
                                        catalog_options=hook.catalog_options())}
        except Exception as e:  # noqa: BLE001 - one unreachable warehouse must not hide the others
            entry = {"error": read_failure(hook, e, timeout)}
        finally:  # whatever happened, the requests waiting for it get an answer
            read.ended = time.monotonic()
            read.future.set_result(entry)


READS = _Reads()


@app.get("/", response_class=HTMLResponse)
def overview(request: Request):
    asked = table_asked_by_ui(request)
    if asked:  # the table's page validates the names as it always does
        return RedirectResponse(render.table_url(*asked, page_root()), status_code=303)
    connections, pending = [], []
    env, timeout, setup_error = None, 0.0, ""
    try:
        env, timeout = job_env(), read_timeout()
    except Exception as e:  # noqa: BLE001 - a bad setting is every connection's answer, in words
        setup_error = f"{type(e).__name__}: {e}"
    for conn_id, hook in paimon_hooks().items():
        entry = {"conn_id": conn_id, "warehouse": "", "tables": []}
        connections.append(entry)
        try:
            entry["warehouse"] = hook.warehouse
            if env is None:
                entry["error"] = setup_error
            else:
                pending.append((entry, READS.entry(conn_id, hook, env, timeout)))
        except Exception as e:  # noqa: BLE001 - a connection's bad fields must not hide the others
            entry["error"] = f"{type(e).__name__}: {e}"
    for entry, read in pending:  # each read ends within its timeout (run_step abandons it then)
        entry.update(read.result())
    return render.overview(connections, page_root())


@app.get("/tables/{conn_id}/{identifier}", response_class=HTMLResponse)
def table(conn_id: str, identifier: str):
    hook = paimon_hooks().get(conn_id)
    if hook is None:
        raise HTTPException(status_code=404, detail=f"no paimon connection {conn_id!r}")
    timeout = 0.0
    try:
        timeout = read_timeout()
        html = run_step(steps.table_page, job_env(), timeout=timeout, catalog_options=hook.catalog_options(),
                        index_root=hook.index_root(), staging_root=hook.staging_root(), conn_id=conn_id,
                        identifier=identifier, runs=recent_runs(), prefix=page_root(),
                        airflow_prefix=airflow_root())
    except Exception as e:  # noqa: BLE001 - a read that failed is the page's answer, in words: never a 500
        # a timeout is the store's (504); any other failure is shown as the overview shows it
        return HTMLResponse(render.read_failed(conn_id, identifier, read_failure(hook, e, timeout), page_root()),
                            status_code=504 if isinstance(e, TimeoutError) else 200)
    if html is None:
        raise HTTPException(status_code=404, detail=f"connection {conn_id!r} has no table {identifier!r}")
    return html
