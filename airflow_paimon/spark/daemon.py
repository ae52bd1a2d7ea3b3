"""The PySpark daemon of our jobs (``spark.python.daemon.module``, set by ``submit_conf``): pyspark's own
daemon, after importing once what every Python worker of our jobs imports. The daemon forks one worker per
task slot; forked from here, each starts with pyspark's worker side, pyarrow, pandas, pypaimon and the
engine already loaded instead of importing them itself (seconds per worker, on every spark-submit).

Run by Spark as ``python -m airflow_paimon.spark.daemon pyspark.worker``.
"""
from __future__ import annotations

import contextlib
import importlib.machinery
import os
import re
import sys
import zipfile

VERSION = re.compile(r"""__version__\s*(?::\s*str)?\s*=\s*["']([^"']+)["']""")
DROPPED_ZIPS: set[str] = set()  # Spark's zips this daemon took off sys.path (connect_daemon keeps them off)


def spark_zips(paths: list[str]) -> list[str]:
    """The pyspark and py4j zips of Spark's distribution among ``paths`` (the workers' PYTHONPATH puts them first)."""
    return [p for p in paths if os.path.basename(p) == "pyspark.zip"
            or (os.path.basename(p).startswith("py4j-") and p.endswith(".zip"))]


def prefer_installed_pyspark() -> None:
    """Take Spark's pyspark and py4j zips off sys.path when this interpreter has the same pyspark installed, so
    the workers import it from there. A Python worker adds its task's files directory to sys.path and calls
    importlib.invalidate_caches() (always with Spark Connect: a directory per session); Python 3.11's zipimporter
    then re-reads its whole archive, once per package imported from it (pyspark.zip has 1,377 entries): 100
    fresh workers took 11.7-11.8 s with the zip, 9.8-10.7 s without (tests/benchmarks/README.md).
    A zip of another version stays: the workers must speak the JVM's protocol."""
    zips = spark_zips(sys.path)
    pyspark_zips = [p for p in zips if os.path.basename(p) == "pyspark.zip"]
    if not pyspark_zips or "pyspark" in sys.modules:
        return
    rest = [p for p in sys.path if p not in zips]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations or importlib.machinery.PathFinder.find_spec(
            "py4j", rest) is None:
        return
    try:
        with open(os.path.join(spec.submodule_search_locations[0], "version.py"), encoding="utf-8") as f:
            installed = VERSION.search(f.read())
        with zipfile.ZipFile(pyspark_zips[0]) as archive:
            zipped = VERSION.search(archive.read("pyspark/version.py").decode("utf-8"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return
    if installed is None or zipped is None or installed.group(1) != zipped.group(1):
        return
    sys.path[:] = rest
    for path in zips:
        sys.path_importer_cache.pop(path, None)
    DROPPED_ZIPS.update(zips)


def preload() -> None:
    """Import what the closures of airflow_paimon/spark/*.py pull in on the workers (pyspark.worker imports
    pandas and pyarrow for the Arrow UDFs)."""
    prefer_installed_pyspark()
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
