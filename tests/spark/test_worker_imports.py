"""Where the Python workers of a spark-submitted job import pyspark from (spark/daemon.py
prefer_installed_pyspark): the interpreter's own pyspark, not the zip Spark puts first on their PYTHONPATH, whose
archive Python 3.11 reads again whole each time a worker invalidates its import caches. A zip of another pyspark
version stays (the workers must speak the JVM's protocol)."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from airflow_paimon.spark.submit import submit_conf

DRIVER = """import sys
import zipimport

import pyarrow as pa
from pyspark.sql import SparkSession


def worker_imports(batches):
    import pyspark

    for _ in batches:
        pass
    zips = sorted(p for p, f in sys.path_importer_cache.items() if isinstance(f, zipimport.zipimporter))
    yield pa.RecordBatch.from_pylist([{"pyspark": pyspark.__file__, "zips": " ".join(zips)}])


spark = SparkSession.builder.getOrCreate()
for row in spark.range(4, numPartitions=2).mapInArrow(worker_imports, "pyspark string, zips string").collect():
    print("pyspark", row.pyspark)
    print("zips", row.zips)
spark.stop()
"""


@pytest.mark.spark
def test_a_submitted_jobs_python_workers_import_the_installed_pyspark(tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    conf = [arg for key, value in submit_conf(sys.executable).items() for arg in ("--conf", f"{key}={value}")]
    out = subprocess.run([str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]", *conf,
                          str(driver)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    found = [line.split(" ", 1)[1] for line in lines if line.startswith("pyspark ")]
    assert len(found) == 2 and all(".zip" not in f and f.endswith("pyspark/__init__.py") for f in found), lines
    assert not any("pyspark.zip" in line or "py4j-" in line for line in lines if line.startswith("zips")), lines


PROBE = """import sys
sys.path[:0] = sys.argv[1:]
from airflow_paimon.spark.daemon import prefer_installed_pyspark
prefer_installed_pyspark()
import pyspark
print(pyspark.__file__)
"""


def fake_spark_zips(directory: Path, version: str) -> list[str]:
    """A pyspark.zip of ``version`` (a package whose __init__ says it is the zip's) and a py4j zip."""
    pyspark_zip, py4j_zip = directory / "pyspark.zip", directory / "py4j-0.10.9.9-src.zip"
    with zipfile.ZipFile(pyspark_zip, "w") as archive:
        archive.writestr("pyspark/__init__.py", "")
        archive.writestr("pyspark/version.py", f"__version__: str = '{version}'\n")
    with zipfile.ZipFile(py4j_zip, "w") as archive:
        archive.writestr("py4j/__init__.py", "")
    return [str(pyspark_zip), str(py4j_zip)]


@pytest.mark.parametrize("same_version", [True, False])
def test_the_daemon_keeps_a_zip_of_another_pyspark_version(tmp_path, same_version):
    import pyspark

    version = pyspark.__version__ if same_version else "3.0.0"
    out = subprocess.run([sys.executable, "-c", PROBE, *fake_spark_zips(tmp_path, version)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": ""})
    assert out.returncode == 0, out.stderr[-3000:]
    imported = out.stdout.strip()
    if same_version:
        assert imported == pyspark.__file__
    else:
        assert imported == str(tmp_path / "pyspark.zip" / "pyspark" / "__init__.py")
