"""The fault suite runs the jobs' retries in-process on the local Spark session of tests/spark."""
import pytest

from spark.conftest import spark_session  # noqa: F401 - the session fixture, shared


@pytest.fixture(scope="session")
def spark(spark_session):  # noqa: F811 - spark_session is the fixture imported above
    """The shared session, writing in Spark tasks (the crash points are in them), as tests/faults/run_job.py's."""
    from airflow_paimon.spark.pipelines.in_driver import MAX_BYTES_CONF

    spark_session.conf.set(MAX_BYTES_CONF, "0")
    return spark_session
