"""The benchmark smoke tests' Spark session."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="module")
def spark_session():
    import bench_upsert
    from pyspark.sql import SparkSession

    # Stop only a session of our own: another test module's session may be the active one (test order varies
    # with pytest-xdist), and getOrCreate hands that back.
    existing = SparkSession.getActiveSession()
    session = bench_upsert.make_spark()
    yield session
    if existing is None:
        session.stop()
