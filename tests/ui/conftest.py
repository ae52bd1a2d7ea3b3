"""One DAG run writes a table; then the real ``airflow api-server`` (plugin loaded through its entry point)
serves the Paimon page on 127.0.0.1, logged-in through SimpleAuthManager's own /auth/token."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from dag.dagrun import run_dag
import processes
from spark_cluster import free_port

DAYS = ["2026-11-20", "2026-11-21"]  # logical dates no other test's run of the daily DAG uses
USER, PASSWORD = "paimon_admin", secrets.token_urlsafe(12)


@dataclass
class Written:
    warehouse: str
    dag_id: str
    table: str
    runs: list[tuple[str, dict]]  # (run_id, {task_id: xcom}) per DAG run, in order

    def run_of_snapshot(self) -> dict[int, str]:
        """snapshot id -> run_id of the run whose commit (or compaction) made it."""
        made = {}
        for run_id, xcoms in self.runs:
            if not xcoms["compact"]["already_committed"] and xcoms["compact"]["compacted_buckets"]:
                made[xcoms["compact"]["snapshot_id"]] = run_id
            made[xcoms["commit"]["snapshot_id"]] = run_id
        return made


@dataclass
class ApiServer:
    url: str
    token: str
    log: Path

    def get(self, path: str, token: str | None = None, cookie: bool = True):
        """(status, body, seconds) of a GET, with the login as the UI sends it (the ``_token`` cookie)."""
        req = urllib.request.Request(self.url + path)
        if token:
            req.add_header("Cookie" if cookie else "Authorization", f"_token={token}" if cookie else f"Bearer {token}")
        start = time.perf_counter()
        try:
            with _NO_REDIRECT.open(req, timeout=60) as r:
                return r.status, r.read().decode(), time.perf_counter() - start
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace"), time.perf_counter() - start

    def redirect(self, path: str, token: str, headers: dict[str, str]) -> tuple[int, str | None]:
        """(status, Location) of a GET with the login cookie and ``headers``."""
        req = urllib.request.Request(self.url + path, headers={**headers, "Cookie": f"_token={token}"})
        try:
            with _NO_REDIRECT.open(req, timeout=60) as r:
                return r.status, None
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Location")


class _KeepRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a redirect to the login page is an answer, not a hop
        return None


_NO_REDIRECT = urllib.request.build_opener(_KeepRedirect)


@pytest.fixture(scope="session")
def written(airflow_home, tmp_path_factory) -> Written:
    """The daily example DAG, two runs through dag.test() (bootstrap, assign-and-write, commit, compact):
    inserts, then updates and cross-partition moves."""
    from paimon_upsert_daily import TABLE, dag
    from run_example import demo_batches

    root = tmp_path_factory.mktemp("ui")
    warehouse, sources = str(root / "warehouse"), root / "sources"
    (sources / "orders").mkdir(parents=True)
    for day, batch in zip(DAYS, demo_batches(DAYS, rows_per_day=400, seed=5)):
        batch.to_parquet(sources / "orders" / f"{day}.parquet", index=False)
    runs = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps({"conn_type": "paimon", "extra": {"warehouse": warehouse}}))
        mp.setenv("AIRFLOW_VAR_PAIMON_SOURCE_ROOT", str(sources))
        for day in DAYS:
            run, states, xcoms = run_dag(dag, day)
            assert run.state == "success", states
            runs.append((run.run_id, xcoms))
    return Written(warehouse, dag.dag_id, TABLE, runs)


@pytest.fixture(scope="session")
def api_server(written, tmp_path_factory) -> ApiServer:
    yield from _api_server(written, tmp_path_factory, "")


PREFIX = "/airflow"  # the path of [api] base_url of prefixed_api_server


@pytest.fixture(scope="session")
def prefixed_api_server(written, tmp_path_factory) -> ApiServer:
    """The api-server of Airflow served under a path (``[api] base_url = http://127.0.0.1:<port>/airflow``): its
    ``url`` ends with that path."""
    yield from _api_server(written, tmp_path_factory, PREFIX)


def _api_server(written, tmp_path_factory, prefix: str):
    home = tmp_path_factory.mktemp("api-server")
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    port = free_port()
    env = {**os.environ,
           "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon",
                                                      "extra": {"warehouse": written.warehouse}}),
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
           "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
           "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}{prefix}",
           # the connection test of an unreachable store (test_paimon_page.py): enabled, and given up on soon
           "AIRFLOW__CORE__TEST_CONNECTION": "Enabled", "AIRFLOW__PAIMON__CONNECTION_TEST_TIMEOUT": "2"}
    log = home / "api-server.log"
    with open(log, "wb") as out:
        proc = processes.start([str(Path(sys.executable).parent / "airflow"), "api-server", "--host", "127.0.0.1",
                                "--port", str(port), "--workers", "1"], env=env, stdout=out,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}{prefix}"
    try:
        _wait_healthy(url, proc, log)
        body = json.dumps({"username": USER, "password": PASSWORD}).encode()
        req = urllib.request.Request(url + "/auth/token", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            token = json.load(r)["access_token"]
        yield ApiServer(url, token, log)
    finally:
        processes.stop(proc)


def _wait_healthy(url: str, proc, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"airflow api-server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/api/v2/monitor/health", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"airflow api-server not healthy after {timeout}s:\n{log.read_text()[-3000:]}")
