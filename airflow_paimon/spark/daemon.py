"""The PySpark daemon of our jobs (``spark.python.daemon.module``, set by ``submit_conf``): pyspark's own
daemon, after importing once what every Python worker of our jobs imports. The daemon forks one worker per
task slot; forked from here, each starts with pyspark's worker side, pyarrow, pandas, pypaimon and the
engine already loaded instead of importing them itself (seconds per worker, on every spark-submit).

Run by Spark as ``python -m airflow_paimon.spark.daemon pyspark.worker``.
"""
from __future__ import annotations

import contextlib
import importlib
import sys

# What the closures of airflow_paimon/spark/*.py pull in on the workers (pyspark.worker imports pandas and
# pyarrow for the Arrow UDFs).
PRELOAD = ("pyspark.worker", "pyarrow", "pyarrow.compute", "pyarrow.parquet", "numpy", "pandas", "rocksdict",
           "airflow_paimon.engine.index.bootstrap", "airflow_paimon.engine.runs.assign_shard",
           "airflow_paimon.engine.write.task", "airflow_paimon.engine.runs.compact", "airflow_paimon.spark.bootstrap")


def preload(modules=PRELOAD) -> None:
    # stdout is the daemon's channel to the JVM (its port goes there): keep import-time prints off it
    with contextlib.redirect_stdout(sys.stderr):
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception as e:  # noqa: BLE001 - a worker imports what it needs itself; the daemon must start
                print(f"airflow_paimon.spark.daemon: {name} not preloaded: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
