"""Which Python the driver and executors run and where spark-submit is found (spark/submit.py)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from airflow_paimon.job_env import JobEnv, resolve_job_env
from airflow_paimon.spark.submit import submit_conf, submit_settings

HERE = JobEnv()  # no job environment configured: this interpreter, which has the job side


def test_local_master_runs_the_workers_interpreter():
    s = submit_settings({}, "local[2]", None, {}, job_env=HERE)
    assert (s.python, s.driver_python) == (sys.executable, sys.executable)
    if (Path(sys.executable).parent / "spark-submit").exists():
        assert s.env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)


def test_cluster_master_leaves_the_executors_python_to_the_cluster_unless_configured():
    s = submit_settings({}, "spark://10.0.0.1:7077", None, {}, job_env=HERE)
    assert s.python is None and s.driver_python == sys.executable  # client mode: the driver runs here
    conf = submit_conf(s.python, s.driver_python)
    assert "spark.pyspark.python" not in conf and conf["spark.pyspark.driver.python"] == sys.executable

    s = submit_settings({"pyspark-python": "/opt/py/bin/python"}, "spark://h:7077", "cluster", {}, job_env=HERE)
    assert (s.python, s.driver_python) == ("/opt/py/bin/python", "/opt/py/bin/python")


def test_spark_conf_beats_the_connection_and_bin_dir_goes_first_on_path():
    s = submit_settings({"pyspark-python": "/a/python", "spark-bin-dir": "/opt/spark/bin"}, "yarn", "client",
                        {"spark.pyspark.python": "/b/python", "spark.pyspark.driver.python": "/c/python"}, job_env=HERE)
    assert (s.python, s.driver_python) == ("/b/python", "/c/python")
    assert s.env["PATH"].split(os.pathsep)[0] == "/opt/spark/bin"
    assert "PYSPARK_PYTHON" not in s.env or s.env["PYSPARK_PYTHON"] == os.environ.get("PYSPARK_PYTHON")


def test_a_configured_job_environment_runs_the_driver_and_local_workers(tmp_path, monkeypatch):
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    s = submit_settings({}, "local[2]", None, {}, job_env=resolve_job_env(None, "spark_x",
                                                                          lambda conn_id: {"job_python": str(python)}))
    assert (s.python, s.driver_python) == (str(python), str(python)) and s.conf == {}
    monkeypatch.setenv("AIRFLOW__PAIMON__JOB_PYTHON", str(python))
    s = submit_settings({}, "spark://h:7077", None, {}, job_env=resolve_job_env(None, None))
    assert s.python is None and s.driver_python == str(python)


def test_a_packed_job_environment_ships_with_spark_archives():
    env = resolve_job_env(None, "spark_x", lambda conn_id: {"job_archive": "hdfs:///envs/paimon.tar.gz"})
    s = submit_settings({}, "spark://h:7077", None, {"spark.archives": "extra.zip#x"}, job_env=env)
    assert s.python == "./env/bin/python" and s.driver_python == sys.executable
    assert s.conf == {"spark.archives": "extra.zip#x,hdfs:///envs/paimon.tar.gz#env"}


def test_a_job_python_that_is_not_an_interpreter_is_named(tmp_path):
    import pytest

    from airflow_paimon.job_env import NoJobEnvironment

    with pytest.raises(NoJobEnvironment, match="job_python '/nowhere/python' .set by Spark connection 'spark_x' "
                                               "extra job_python. is not an executable"):
        resolve_job_env(None, "spark_x", lambda conn_id: {"job_python": "/nowhere/python"})
