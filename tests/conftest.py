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
from run_example import configure_env, migrate_db  # noqa: E402

_PATHS = configure_env(_HOME)
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(DAGS)


@pytest.fixture(scope="session")
def airflow_home():
    """Airflow on a fresh SQLite DB (migrated once per session), Spark on local[2]."""
    migrate_db()
    return _PATHS


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")
