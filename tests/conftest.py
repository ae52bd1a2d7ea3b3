"""Test set-up: Airflow on a throw-away SQLite home, local Spark, one warehouse per test."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_HOME = Path(tempfile.mkdtemp(prefix="airflow-paimon-tests-"))
# dag.test() runs only DAGs of the DAG folder: the shipped DAGs plus the tests' own, copied side by side.
DAGS = _HOME / "dags"
shutil.copytree(ROOT / "dags", DAGS)
for f in (ROOT / "tests" / "dag" / "dags").glob("*.py"):
    shutil.copy(f, DAGS)
sys.path.insert(0, str(DAGS))
sys.path.insert(0, str(ROOT / "tests"))


# Airflow reads its home at first import, so the environment is set before any test module imports it.
from airflow_paimon.embedded import configure_env, migrate_db  # noqa: E402

_PATHS = configure_env(_HOME, DAGS)


# Seconds each of the longest test files took in the last full run (docs/testing.md), the install route with its
# pip-built Airflow built afresh, as on a new machine. Only their order matters: pytest-xdist (--dist loadfile)
# hands files to its workers in collection order, so the longest go first and no worker runs one alone at the end.
LONGEST_FILES = {
    "install/test_installed_wheel.py": 1000, "java/test_java_paimon_reads.py": 60,
    "faults/test_crash_recovery.py": 313, "dag/test_incremental_read.py": 298, "dag/test_object_store.py": 246,
    "dag/test_schema_evolution_dag.py": 227, "benchmarks/test_bench_submit_smoke.py": 220,
    "dag/test_deletion_vector_dag.py": 196,
    "unit/commit/test_commit_race.py": 191, "benchmarks/test_bench_dag_run_smoke.py": 50,
    "benchmarks/test_bench_smoke.py": 210, "dag/test_cluster.py": 146, "dag/test_upsert_dag.py": 143,
    "dag/test_connect.py": 126, "spark/test_table_shapes.py": 121, "dag/test_partition_overwrite_dag.py": 120,
    "dag/test_rollback_dag.py": 180, "dag/test_compact_dag.py": 94, "ui/test_paimon_page.py": 91,
    "ui/test_browser.py": 73, "dag/test_input_safety.py": 65, "dag/test_maintenance_dag.py": 63,
    "dag/test_class_data_sharing.py": 62, "scheduler/test_reruns.py": 560,
}


def pytest_sessionfinish(session, exitstatus):
    """The Java reader JVM of this test process ends with its session (java_paimon), if one was started."""
    if "java_paimon" in sys.modules:
        sys.modules["java_paimon"].stop_reader()


def pytest_collection_modifyitems(config, items):
    """The longest files first (LONGEST_FILES), the rest in collection order."""
    tests = Path(__file__).resolve().parent

    def seconds(item) -> int:
        try:
            return LONGEST_FILES.get(item.path.relative_to(tests).as_posix(), 0)
        except ValueError:
            return 0

    items.sort(key=seconds, reverse=True)


@pytest.fixture(scope="session")
def airflow_home():
    """Airflow on a fresh SQLite DB (migrated once per session), Spark on local[2]."""
    migrate_db()
    return _PATHS


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def opts(warehouse):
    """The catalog options of ``warehouse``."""
    return {"warehouse": warehouse}


@pytest.fixture
def index_root(warehouse):
    """The connection's default index root of ``warehouse``."""
    from airflow_paimon.engine import layout

    return layout.default_root(warehouse, "index")


@pytest.fixture
def s3_catalog_options(monkeypatch, tmp_path):
    """A moto S3 server on 127.0.0.1 with one bucket (``lake``); the catalog options that reach it."""
    import logging
    import threading

    from moto.s3.responses import S3Response
    from moto.server import ThreadedMotoServer

    from airflow_paimon.engine import storage

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws of this machine either
    # moto checks If-None-Match and then stores the object, unlocked, on its threaded server; S3 does the
    # two atomically: one lock around moto's PutObject keeps S3's contract on this stand-in
    put_object, lock = S3Response.put_object, threading.Lock()

    def atomic_put_object(self):
        with lock:
            return put_object(self)

    monkeypatch.setattr(S3Response, "put_object", atomic_put_object)
    access_log = logging.getLogger("werkzeug")  # a line per request, thousands per test: only its errors
    monkeypatch.setattr(access_log, "level", logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto keeps its buckets in process-wide state, not in the server: a fresh server of a later test in the
    # same pytest worker would see this one's warehouse (a table of another shape); moto's reset endpoint clears it
    import urllib.request
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"), timeout=30)
    options = {"warehouse": "s3://lake/warehouse", "fs.s3.endpoint": f"http://{host}:{port}",
               "fs.s3.accessKeyId": "paimon-test-key", "fs.s3.accessKeySecret": "paimon-test-secret",
               "fs.s3.region": "us-east-1", "fs.s3.path-style-access": "true"}
    import boto3
    boto3.client("s3", endpoint_url=options["fs.s3.endpoint"], region_name="us-east-1",
                 aws_access_key_id=options["fs.s3.accessKeyId"],
                 aws_secret_access_key=options["fs.s3.accessKeySecret"]).create_bucket(Bucket="lake")
    yield options
    storage.configure({})
    server.stop()
