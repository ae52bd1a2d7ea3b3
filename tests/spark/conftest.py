"""An in-process local Spark session, and the three jobs called directly (no spark-submit, no Airflow)."""
from __future__ import annotations

import logging
import sys

import pytest

# py4j logs its shutdown at interpreter exit, after pytest has closed the captured streams.
logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def spark_session():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("airflow-paimon-tests")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false").getOrCreate())
    yield session
    session.stop()


@pytest.fixture
def spark(spark_session):
    """The session, writing in Spark tasks as big batches do: the tests' batches are small enough for the driver
    (spark/pipelines/in_driver.py), which tests ask for themselves."""
    from airflow_paimon.spark.pipelines.in_driver import MAX_BYTES_CONF

    spark_session.conf.set(MAX_BYTES_CONF, "0")
    return spark_session
