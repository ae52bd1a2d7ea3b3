"""The fault suite runs the jobs' retries in-process on the local Spark session of tests/spark."""
from spark.conftest import spark  # noqa: F401 - the session fixture, shared
