"""The package as users get it: build the wheel, install it into a fresh venv (offline, from the wheels the
lock pinned, which ``uv sync --frozen`` left in uv's cache), and run a DAG from the installed package in a
directory without the checkout — the Spark job scripts must come from the wheel."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from airflow_paimon.engine.table import get_table
from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.install, pytest.mark.dag]

ROOT = Path(__file__).resolve().parents[2]


def _uv() -> list[str]:
    """The uv that runs the tests (``uv run`` exports it as UV), else the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.skip("uv not found (run the tests through `uv run`)")
    return [found]

DAG_FILE = '''
import pendulum
from airflow.sdk import DAG
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

SCHEMA = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
          "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}}
with DAG("installed_upsert", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         params={"source": ""}) as dag:
    (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="db.t", table_schema=SCHEMA, shards=2)
     >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="db.t", source="{{ params.source }}")
     >> PaimonCommitOperator(task_id="commit", table="db.t"))
'''

RUNNER = '''
import json, subprocess, sys
from pathlib import Path
import airflow_paimon
from airflow_paimon.operators.paimon import spark_job_path

assert Path(airflow_paimon.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), airflow_paimon.__file__
job = spark_job_path("assign_and_write")
assert Path(job).resolve().is_relative_to(Path(sys.prefix).resolve()), job
subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], check=True,
               stdout=subprocess.DEVNULL)
sys.path.insert(0, sys.argv[1])
from installed_dag import dag
for source in sys.argv[2:]:
    run = dag.test(run_conf={"source": source})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    print(json.dumps({"state": run.state, "tasks": states, "job": job}))
'''


def _run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


def install_wheel(venv: Path, dist: Path) -> None:
    """What docs/install.md describes for an existing Airflow (uv with the cachetools override), offline."""
    _run([*_uv(), "build", "--wheel", "-o", str(dist)], cwd=ROOT)
    wheel = next(dist.glob("airflow_paimon-*.whl"))
    # the dependencies at the lock's versions (no dev group, not the project), then the wheel itself, resolved
    # against them; the cachetools override is the one pyproject's [tool.uv] declares (docs/install.md).
    _run([*_uv(), "sync", "--frozen", "--offline", "--no-dev", "--no-install-project", "--no-compile-bytecode", "-q"],
         cwd=ROOT, env={**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)})
    overrides = dist / "overrides.txt"
    overrides.write_text("cachetools==8.0.1\n")
    _run([*_uv(), "pip", "install", "--offline", "--python", str(venv / "bin" / "python"), "--override",
          str(overrides), str(wheel)], cwd=dist)


def test_wheel_installed_in_a_fresh_venv_runs_a_dag(tmp_path):
    started = time.monotonic()
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    install_wheel(venv, tmp_path / "dist")
    installed = time.monotonic() - started

    (work / "dags").mkdir()
    (work / "dags" / "installed_dag.py").write_text(DAG_FILE)
    (work / "runner.py").write_text(RUNNER)
    warehouse = work / "warehouse"
    batches = [pd.DataFrame({"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": [1.0, 2.0, 3.0, 4.0]}),
               pd.DataFrame({"id": [2, 4, 5], "dt": ["b", "b", "a"], "v": [20.0, 40.0, 50.0]})]
    sources = []
    for i, batch in enumerate(batches):
        sources.append(str(work / f"batch{i}.parquet"))
        batch.to_parquet(sources[-1], index=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV"))}
    env.update({
        "AIRFLOW_HOME": str(work / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(work / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{work / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "extra": {"warehouse": str(warehouse)}}),
        # nothing of the checkout's venv: the installed venv is found through its own interpreter only
        "PATH": os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if str(ROOT) not in p),
    })
    done = _run([str(venv / "bin" / "python"), "-I", "runner.py", str(work / "dags"), *sources], cwd=work, env=env)
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"state"')]
    assert [r["state"] for r in runs] == ["success", "success"], done.stdout[-3000:] + done.stderr[-3000:]
    assert str(venv) in runs[0]["job"] and "_spark_jobs" in runs[0]["job"]
    # the task logs are in the output (each task's progress line), and the wheel carries our log4j2 configuration
    # (spark/log4j2.properties): Spark's default profile is not used
    output = done.stdout + done.stderr
    assert "commit db.t: snapshot 1 APPEND" in output and "commit db.t: snapshot 2 APPEND" in output, output[-3000:]
    assert "Using Spark's default log4j profile" not in output

    table = get_table({"warehouse": str(warehouse)}, "db.t")
    assert_table_equals(table, expected_upsert(batches, "id"), "id")
    assert len(table.snapshot_manager().list_snapshots()) == 2
    print(f"install {installed:.1f} s, total {time.monotonic() - started:.1f} s")
