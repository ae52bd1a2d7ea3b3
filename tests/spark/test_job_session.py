"""The shuffle partitions and Arrow batch bytes of a spark-submitted job's session (spark/job_frame.py spark_session):
Spark's default parallelism and 8 mb unless the operator's spark_conf (or shuffle_partitions) says otherwise.
Run as spark-submit does it: the driver's session is whatever ``--master`` and ``--conf`` made it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ARROW, EIGHT_MB = "spark.sql.execution.arrow.maxBytesPerBatch", str(8 * 2**20)
DRIVER = """import sys
from airflow_paimon.engine.jobs.specs import JobSpec
from airflow_paimon.spark.job_frame import JobRun, job_running, spark_session

partitions = int(sys.argv[1]) or None
with job_running(JobRun(None)):
    spark = spark_session(JobSpec(catalog_options={}, table="db.t", shuffle_partitions=partitions), "test")
    print("partitions", spark.conf.get("spark.sql.shuffle.partitions"))
    print("arrow bytes", spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch"))
"""


@pytest.mark.parametrize("spec_partitions, conf, expected, arrow_bytes", [
    (0, [], "3", EIGHT_MB),  # local[3]: three cores
    (0, ["--conf", "spark.sql.shuffle.partitions=7", "--conf", f"{ARROW}=1000"], "7", "1000"),  # spark_conf
    (5, ["--conf", "spark.sql.shuffle.partitions=7"], "5", EIGHT_MB),  # the operator's shuffle_partitions
])
def test_session_conf_of_a_submitted_job(tmp_path, spec_partitions, conf, expected, arrow_bytes):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    submit = Path(sys.executable).parent / "spark-submit"
    out = subprocess.run([str(submit), "--master", "local[3]", "--conf", f"spark.pyspark.python={sys.executable}",
                          "--conf", f"spark.pyspark.driver.python={sys.executable}", *conf, str(driver),
                          str(spec_partitions)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"partitions {expected}" in out.stdout.splitlines()
    assert f"arrow bytes {arrow_bytes}" in out.stdout.splitlines()
