"""Which Python the driver and executors run and where spark-submit is found (spark/submit.py)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from airflow_paimon.spark.submit import submit_conf, submit_settings


def test_local_master_runs_the_workers_interpreter():
    s = submit_settings({}, "local[2]", None, {})
    assert (s.python, s.driver_python) == (sys.executable, sys.executable)
    if (Path(sys.executable).parent / "spark-submit").exists():
        assert s.env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)


def test_cluster_master_leaves_the_executors_python_to_the_cluster_unless_configured():
    s = submit_settings({}, "spark://10.0.0.1:7077", None, {})
    assert s.python is None and s.driver_python == sys.executable  # client mode: the driver runs here
    conf = submit_conf(s.python, s.driver_python)
    assert "spark.pyspark.python" not in conf and conf["spark.pyspark.driver.python"] == sys.executable

    s = submit_settings({"pyspark-python": "/opt/py/bin/python"}, "spark://h:7077", "cluster", {})
    assert (s.python, s.driver_python) == ("/opt/py/bin/python", "/opt/py/bin/python")


def test_spark_conf_beats_the_connection_and_bin_dir_goes_first_on_path():
    s = submit_settings({"pyspark-python": "/a/python", "spark-bin-dir": "/opt/spark/bin"}, "yarn", "client",
                        {"spark.pyspark.python": "/b/python", "spark.pyspark.driver.python": "/c/python"})
    assert (s.python, s.driver_python) == ("/b/python", "/c/python")
    assert s.env["PATH"].split(os.pathsep)[0] == "/opt/spark/bin"
    assert "PYSPARK_PYTHON" not in s.env or s.env["PYSPARK_PYTHON"] == os.environ.get("PYSPARK_PYTHON")
