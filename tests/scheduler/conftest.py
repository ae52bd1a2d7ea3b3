"""A real Airflow: PostgreSQL as the metadata DB, ``airflow api-server``, ``airflow scheduler`` (LocalExecutor)
and ``airflow dag-processor`` as subprocesses, one set per test module; the tests drive DAG runs through the
REST API as a user (or the UI) does: trigger, clear, read XComs.

PostgreSQL comes from the machine (Debian: ``apt-get install -y postgresql``; its binaries under
/usr/lib/postgresql/<version>/bin). Not installed: the tests skip, naming it. Installed but failing to start:
they fail, with its log."""
from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import processes
from spark_connect import connection

HERE = Path(__file__).resolve().parent
AIRFLOW = str(Path(sys.executable).parent / "airflow")
USER, PASSWORD = "paimon_admin", secrets.token_urlsafe(12)
FINISHED = ("success", "failed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, chars: int = 4000) -> str:
    try:
        return f"--- {path.name} (last {chars} chars) ---\n{path.read_text(errors='replace')[-chars:]}"
    except OSError as e:
        return f"--- {path.name}: {e} ---"


def stop(process: subprocess.Popen | None, timeout: float = 30) -> None:
    """SIGTERM to the process group (the scheduler's executor workers, the api-server's worker), then SIGKILL."""
    processes.stop(process, timeout)


# --- PostgreSQL ---------------------------------------------------------------------------------------------------

def postgres_bin() -> Path:
    """The newest installed PostgreSQL's bin directory; skips (naming the package) when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if not found and shutil.which("pg_ctl"):
        found = [shutil.which("pg_ctl")]
    if not found:
        pytest.skip("scheduler tests need PostgreSQL (Debian: apt-get install -y postgresql)")
    return Path(found[-1]).parent


@dataclass
class Postgres:
    url: str  # SQLAlchemy URL of the airflow database
    data: Path
    bin: Path
    as_user: list[str]
    process: subprocess.Popen

    def stop(self) -> None:
        subprocess.run([*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data / "pgdata"), "-m", "fast",
                        "-w", "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        processes.stop(self.process)
        shutil.rmtree(self.data, ignore_errors=True)


def start_postgres(timeout: float = 60) -> Postgres:
    """initdb + pg_ctl start on a private data directory, listening on 127.0.0.1 only (a free port), trusted
    local logins, durability off (a throw-away DB). As root the server runs as ``postgres`` (it refuses root)."""
    bin_dir = postgres_bin()
    data = Path(tempfile.mkdtemp(prefix="airflow-paimon-pg-"))  # under /tmp: pytest's tmp dirs are root-only
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(data, "postgres", "postgres")
    pgdata, log, port = data / "pgdata", data / "postgres.log", free_port()

    def run(*args: str) -> None:
        done = processes.run([*as_user, *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise RuntimeError(f"PostgreSQL is installed ({bin_dir}) but {Path(args[0]).name} failed "
                               f"({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}\n"
                               + (tail(log) if log.exists() else ""))

    run(str(bin_dir / "initdb"), "-D", str(pgdata), "-U", "airflow", "--auth=trust", "-E", "UTF8", "--no-sync")
    options = (f"-h 127.0.0.1 -p {port} -k {data} -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
               "-c max_connections=200")
    # the server in the foreground, not pg_ctl start: pg_ctl puts it in a session of its own, out of reach of
    # processes.start's watchdog if this process dies
    with open(log, "ab") as out:
        process = processes.start([*as_user, str(bin_dir / "postgres"), "-D", str(pgdata), *options.split()],
                                  stdout=out, stderr=subprocess.STDOUT)
    server = Postgres(f"postgresql+psycopg2://airflow@127.0.0.1:{port}/airflow", data, bin_dir, as_user, process)
    try:
        deadline = time.monotonic() + timeout
        while subprocess.run([str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)],
                             timeout=30).returncode:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL is installed ({bin_dir}) but did not start "
                                   f"({process.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user="airflow", dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE airflow")
        conn.close()
    except Exception:
        server.stop()
        raise
    return server


# --- Airflow ------------------------------------------------------------------------------------------------------

@dataclass
class Airflow:
    url: str
    home: Path
    env: dict
    warehouse: Path  # paimon_default's
    sources: Path  # where a test puts its source files
    token: str = ""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    started_in: dict[str, float] = field(default_factory=dict)  # seconds: postgres, migrate, api-server, dag

    def table(self, identifier: str):
        from airflow_paimon.engine.table.table import get_table

        return get_table({"warehouse": str(self.warehouse)}, identifier)

    def log(self, name: str) -> Path:
        return self.home / f"{name}.log"

    def start(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.log(name), "ab") as out:
            self.processes[name] = processes.start([AIRFLOW, *args], env=self.env, stdout=out,
                                                   stderr=subprocess.STDOUT)
        return self.processes[name]

    def diagnostics(self, dag_id: str | None = None, run_id: str | None = None) -> str:
        """The process logs' tails and, for a run, its task logs' tails: what a failing assertion shows."""
        parts = [tail(self.log(name)) for name in ("scheduler", "api-server", "dag-processor")]
        if dag_id:
            pattern = str(self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id or '*'}" / "task_id=*" / "*.log")
            for path in sorted(glob.glob(pattern), key=os.path.getmtime)[-4:]:
                parts.append(tail(Path(path), 3000))
        dead = [f"{name} exited {p.returncode}" for name, p in self.processes.items() if p.poll() is not None]
        return "\n".join(([f"dead processes: {dead}"] if dead else []) + parts)

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | str]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.token}"} if self.token else {})})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode(errors="replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        """The JSON answer of a request that must succeed."""
        status, answer = self.request(method, path, body)
        assert 200 <= status < 300, f"{method} {path} -> {status}: {answer}\n{self.diagnostics()}"
        return answer

    def wait_for(self, what: str, check, timeout: float, dag_id: str | None = None, run_id: str | None = None):
        """Poll ``check()`` until it returns something truthy; fail with the logs after ``timeout`` seconds, or
        as soon as one of the Airflow processes died."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            dead = [n for n, p in self.processes.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else f"not after {timeout:.0f} s"
                pytest.fail(f"waiting for {what}: {why}\n{self.diagnostics(dag_id, run_id)}", pytrace=False)
            time.sleep(1)

    # --- what the tests do ---

    def wait_for_dag(self, dag_id: str, timeout: float = 120) -> None:
        """Until the dag-processor has parsed the DAG; then unpause it."""
        self.wait_for(f"DAG {dag_id} parsed", lambda: self.request("GET", f"/api/v2/dags/{dag_id}")[0] == 200,
                      timeout)
        self.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def trigger(self, dag_id: str, conf: dict, logical_date: str | None = None) -> str:
        run = self.call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": logical_date, "conf": conf})
        return run["dag_run_id"]

    def backfill(self, dag_id: str, from_date: str, to_date: str, max_active_runs: int, run_backwards: bool = False,
                 conf: dict | None = None) -> int:
        """A backfill as the UI's dialog creates it (``POST /api/v2/backfills``); its id."""
        return self.call("POST", "/api/v2/backfills", {
            "dag_id": dag_id, "from_date": from_date, "to_date": to_date, "run_backwards": run_backwards,
            "max_active_runs": max_active_runs, "dag_run_conf": conf or {}, "reprocess_behavior": "none"})["id"]

    def runs(self, dag_id: str) -> list[dict]:
        """Every run of the DAG, oldest logical date first."""
        return self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100&order_by=logical_date")["dag_runs"]

    def wait_backfill(self, backfill_id: int, dag_id: str, runs: int, timeout: float) -> list[dict]:
        """Until the backfill completed and its ``runs`` runs finished; the DAG's runs."""
        def done():
            if self.call("GET", f"/api/v2/backfills/{backfill_id}").get("completed_at") is None:
                return None
            found = self.runs(dag_id)
            return found if len(found) == runs and all(r["state"] in FINISHED for r in found) else None

        return self.wait_for(f"backfill {backfill_id} of {dag_id}", done, timeout, dag_id)

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}")

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        answer = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}"
                                  "/taskInstances")
        return {ti["task_id"]: ti["state"] for ti in answer["task_instances"]}

    def wait_finished(self, dag_id: str, run_id: str, timeout: float = 300) -> tuple[str, dict]:
        """(run state, {task_id: state}) once the run finished."""
        state = self.wait_for(f"run {run_id} of {dag_id} to finish",
                              lambda: (s := self.run(dag_id, run_id)["state"]) in FINISHED and s, timeout,
                              dag_id, run_id)
        return state, self.task_states(dag_id, run_id)

    def clear(self, dag_id: str, run_id: str, task_ids: list[str] | None = None) -> None:
        """Clear the run (all its tasks), or only ``task_ids``, resetting the run to queued: the UI's Clear."""
        if task_ids is None:
            self.call("POST", f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}/clear",
                      {"dry_run": False, "only_failed": False})
        else:
            self.call("POST", f"/api/v2/dags/{dag_id}/clearTaskInstances",
                      {"dry_run": False, "dag_run_id": run_id, "task_ids": task_ids, "only_failed": False,
                       "reset_dag_runs": True})

    def xcom(self, dag_id: str, run_id: str, task_id: str) -> dict:
        answer = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id, safe='')}"
                                  f"/taskInstances/{task_id}/xcomEntries/return_value")
        value = answer["value"]
        return json.loads(value) if isinstance(value, str) else value

    def stop(self) -> None:
        for name in ("scheduler", "dag-processor", "api-server"):
            stop(self.processes.get(name))


def wait_healthy(airflow: Airflow, timeout: float = 180) -> None:
    def healthy():
        try:
            with urllib.request.urlopen(airflow.url + "/api/v2/monitor/health", timeout=5):
                return True
        except OSError:
            return False

    airflow.wait_for("the api-server to answer /api/v2/monitor/health", healthy, timeout)


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory, request):
    """PostgreSQL, then a migrated Airflow on it with api-server, scheduler (LocalExecutor) and dag-processor
    over a DAGs folder of the test module's ``DAG_FILES`` (paths); ``paimon_default`` is a fresh warehouse
    (``airflow.warehouse``), ``spark_default`` local[2] (tests/conftest.py), or a Spark Connect server's
    (``connect_server``, the test process's one) when the module's ``SPARK`` is ``"connect"``. Yields an Airflow
    logged in as an admin; stops everything after."""
    with contextlib.ExitStack() as stack:
        yield from _scheduler(tmp_path_factory, request, stack)


def _scheduler(tmp_path_factory, request, stack):
    started = time.monotonic()
    spark_conn = {}
    if getattr(request.module, "SPARK", "local") == "connect":  # this test process's server (tests/conftest.py)
        spark_conn = {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(connection(request.getfixturevalue("connect_server")))}
    postgres = start_postgres()
    took = {"spark and postgres": time.monotonic() - started}
    home = tmp_path_factory.mktemp("scheduler")
    dags = home / "dags"
    dags.mkdir()
    for path in getattr(request.module, "DAG_FILES", []):
        shutil.copy(path, dags)
    warehouse = home / "warehouse"
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ,
           "AIRFLOW_HOME": str(home),
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": postgres.url,
           "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
           "AIRFLOW__CORE__PARALLELISM": str(getattr(request.module, "PARALLELISM", 4)),
           "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
           # the executor signs each task's token, the api-server checks it: one secret for both
           "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
           "AIRFLOW__API__BASE_URL": url,
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
           "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),  # not the default 8793 others may hold
           "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
           "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
           "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
           "SPARK_LOCAL_IP": "127.0.0.1",
           "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "extra": {"warehouse": str(warehouse)}}),
           **spark_conn}
    airflow = Airflow(url, home, env, warehouse, home / "sources")
    airflow.sources.mkdir()
    try:
        step = time.monotonic()
        migrate = subprocess.run([AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, timeout=300)
        assert migrate.returncode == 0, (f"airflow db migrate failed:\n{migrate.stdout[-3000:]}\n"
                                         f"{migrate.stderr[-3000:]}")
        took["migrate"] = time.monotonic() - step
        step = time.monotonic()
        airflow.start("api-server", "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1")
        airflow.start("scheduler", "scheduler")
        airflow.start("dag-processor", "dag-processor")
        wait_healthy(airflow)
        body = {"username": USER, "password": PASSWORD}
        airflow.token = airflow.call("POST", "/auth/token", body)["access_token"]
        took["api-server"] = time.monotonic() - step
        took["total"] = time.monotonic() - started
        airflow.started_in = took
        yield airflow
    finally:
        airflow.stop()
        postgres.stop()
