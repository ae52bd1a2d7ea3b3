"""Test set-up: Airflow on a throw-away SQLite home, local Spark, one warehouse per test."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dags"))
sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(scope="session")
def airflow_home():
    """Airflow configured on a fresh SQLite DB (migrated once), Spark on local[2]."""
    from run_example import configure

    home = Path(tempfile.mkdtemp(prefix="airflow-paimon-tests-"))
    paths = configure(home)
    return paths


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")
