"""Embedded defaults, for running DAGs from a checkout without a deployment: local Spark (``local[2]``), a
warehouse directory and Airflow on SQLite, all under one home directory. The example runner
(dags/run_example.py), the tests (tests/conftest.py) and the benchmarks set up with these; no other module of
the package imports this one.

Airflow reads its home and configuration when it is first imported: call :func:`configure_env` before that."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def configure_env(home: Path, dags_folder: Path) -> dict[str, Path]:
    """Point Airflow (its home, SQLite DB and DAG folder), the ``spark_default`` and ``paimon_default``
    connections and the example's source root at ``home``; returns the warehouse and source directories."""
    home.mkdir(parents=True, exist_ok=True)
    paths = {"warehouse": home / "warehouse", "sources": home / "sources"}
    env = {
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow' / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon",
                                                   "extra": {"warehouse": str(paths["warehouse"])}}),
        "AIRFLOW_VAR_PAIMON_SOURCE_ROOT": str(paths["sources"]),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    }
    os.environ.update(env)
    (home / "airflow").mkdir(exist_ok=True)
    return paths


def quiet_output() -> None:
    """Output a person reads (unless set otherwise): Airflow's own lines from WARNING, the task logs at INFO (each
    task's progress line, spark-submit's command and Spark's warnings); Spark on loopback, as local[2] is."""
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("AIRFLOW__LOGGING__NAMESPACE_LEVELS", "airflow.task=INFO")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def migrate_db() -> None:
    """Create (or bring up to date) the SQLite DB of :func:`configure_env`: ``airflow db migrate`` of this
    interpreter's environment."""
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], check=True,
                   stdout=subprocess.DEVNULL)
