"""The seam between the Spark glue and pyspark's private members: the one place that names them.

pyspark offers no public way to read Spark's size estimate of a DataFrame's plan, nor to wait for the result
releases a Spark Connect client still has in flight, so two private attributes are read, each through a function
here and listed in ``REQUIRED``. tests/unit/project/test_pyspark_compat.py checks every entry against the installed
pyspark, so an upgrade that renames or drops one fails there, naming it; tests/unit/project/test_paimon_compat.py
fails when a module but this one names a private member of another object.
"""
from __future__ import annotations

from typing import Any

JAVA_DATAFRAME = "_jdf"  # a classic DataFrame's Java Dataset (py4j); a Connect DataFrame has none
RELEASE_FUTURES = "_release_futures"  # SparkConnectClient's futures of its ReleaseExecute calls (pyspark 4)

# (owner "module:Class", attribute set in its __init__, where the Spark glue uses it)
REQUIRED = (
    ("pyspark.sql.classic.dataframe:DataFrame", JAVA_DATAFRAME,
     "has_jvm_plan, plan_size_bytes: spark/pipelines/in_driver.py"),
    ("pyspark.sql.connect.client.core:SparkConnectClient", RELEASE_FUTURES,
     "pending_releases: spark/connect.py stop_session"),
)


def has_jvm_plan(df: Any) -> bool:
    """Whether ``df``'s plan lives in a JVM of this process (a classic DataFrame; not a Spark Connect client's)."""
    return getattr(df, JAVA_DATAFRAME, None) is not None


def plan_size_bytes(df: Any) -> int:
    """Spark's size estimate (bytes) of the optimized plan of ``df``, a DataFrame with a JVM plan (has_jvm_plan)."""
    return int(str(getattr(df, JAVA_DATAFRAME).queryExecution().optimizedPlan().stats().sizeInBytes()))


def pending_releases(session: Any) -> list:
    """The futures of the result releases ``session``'s Spark Connect client has in flight (none: an empty list)."""
    return list(getattr(getattr(session, "client", None), RELEASE_FUTURES, None) or ())
