"""The driver JVM's options of a short job (spark/submit.py SHORT_JOB_JAVA_OPTIONS), checked in the GC log of a
real spark-submit that starts a session and runs a Python (mapInArrow) query: the serial GC, and no full GC for
metaspace while Spark's classes load (each one a 30-60 ms pause on the job's path)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_paimon.spark.submit import SHORT_JOB_JAVA_OPTIONS

pytestmark = pytest.mark.spark

JOB = """from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
df = spark.range(100000).selectExpr("id", "id % 7 AS k").repartition(3, "k")
print("rows", df.mapInArrow(lambda batches: batches, df.schema).groupBy("k").count().count())
"""


def test_no_full_gc_for_metaspace(tmp_path):
    job, gc_log = tmp_path / "job.py", tmp_path / "gc.log"
    job.write_text(JOB)
    submit = Path(sys.executable).parent / "spark-submit"
    out = subprocess.run([str(submit), "--master", "local[2]", "--conf", f"spark.pyspark.python={sys.executable}",
                          "--conf", f"spark.pyspark.driver.python={sys.executable}", "--conf",
                          f"spark.driver.extraJavaOptions={SHORT_JOB_JAVA_OPTIONS} -Xlog:gc:file={gc_log}",
                          str(job)], capture_output=True, text=True, timeout=300,
                         # the conf alone: the suite's own SPARK_SUBMIT_OPTS (tests/conftest.py) holds the same flags
                         env={k: v for k, v in os.environ.items() if k != "SPARK_SUBMIT_OPTS"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "rows 7" in out.stdout.splitlines()
    lines = gc_log.read_text().splitlines()
    assert any("Using Serial" in line for line in lines), lines[:3]
    assert not [line for line in lines if "Metadata GC Threshold" in line]
