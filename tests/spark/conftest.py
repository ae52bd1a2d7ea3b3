"""An in-process local Spark session, and the three jobs called directly (no spark-submit, no Airflow)."""
from __future__ import annotations

import logging
import sys

import pytest

# py4j logs its shutdown at interpreter exit, after pytest has closed the captured streams.
logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("airflow-paimon-tests")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false").getOrCreate())
    yield session
    session.stop()
