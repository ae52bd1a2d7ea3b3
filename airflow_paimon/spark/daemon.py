"""The PySpark daemon of our jobs (``spark.python.daemon.module``, set by ``submit_conf``): pyspark's own
daemon, after importing once what every Python worker of our jobs imports. The daemon forks one worker per
task slot; forked from here, each starts with pyspark's worker side, pyarrow, pandas, pypaimon and the
engine already loaded instead of importing them itself (seconds per worker, on every spark-submit).

Run by Spark as ``python -m airflow_paimon.spark.daemon pyspark.worker``.
"""
from __future__ import annotations

import contextlib
import sys


def preload() -> None:
    """Import what the closures of airflow_paimon/spark/*.py pull in on the workers (pyspark.worker imports
    pandas and pyarrow for the Arrow UDFs)."""
    # stdout is the daemon's channel to the JVM (its port goes there): keep import-time prints off it
    with contextlib.redirect_stdout(sys.stderr):
        try:
            import numpy  # noqa: F401
            import pandas  # noqa: F401
            import pyarrow.compute
            import pyarrow.parquet  # noqa: F401
            import pyspark.worker  # noqa: F401
            import rocksdict  # noqa: F401

            import airflow_paimon.engine.index.bootstrap
            import airflow_paimon.engine.runs.assign_shard
            import airflow_paimon.engine.runs.compact
            import airflow_paimon.engine.write.task
            import airflow_paimon.spark.bootstrap  # noqa: F401
        except Exception as e:  # noqa: BLE001 - a worker imports what it needs itself; the daemon must start
            print(f"airflow_paimon.spark.daemon: not all preloaded: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
