"""The package as users get it, by the documented route: an existing Airflow 3.3.2 (a fresh venv with the lock's
Airflow, Spark provider and pyspark, offline from uv's cache, which ``uv sync --frozen`` filled); pip is asked to
install the wheel and must refuse with the reason, changing nothing; then the documented uv command installs it
without changing any installed version, and a DAG runs from the installed package in a directory without the
checkout — the Spark job scripts must come from the wheel."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
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
from airflow_paimon.engine.jobs import JOBS
from airflow_paimon.operators.backends import entry_script

assert Path(airflow_paimon.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), airflow_paimon.__file__
job = entry_script(JOBS["assign_and_write"])
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


AIRFLOW = "3.3.2"  # the lock's Airflow: the "existing" one of the route
# The pip a venv of this Python starts with (ensurepip) and the newest pip: both must refuse.
NEWEST_PIP = "26.3"


def _env() -> dict[str, str]:
    """The environment without the checkout's venv (uv run exports VIRTUAL_ENV and puts its bin first on PATH)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV", "UV_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if str(ROOT) not in p)
    return env


def installed(venv: Path) -> dict[str, str]:
    """Every distribution of the venv and its version, as its own interpreter sees them."""
    code = ("import importlib.metadata as m, json, re; print(json.dumps({re.sub(r'[-_.]+', '-', "
            "d.metadata['Name']).lower(): d.version for d in m.distributions()}))")
    return json.loads(_run([str(venv / "bin" / "python"), "-I", "-c", code], env=_env()).stdout)


def existing_airflow(venv: Path) -> None:
    """A user's Airflow 3.3.2 that can run Spark jobs: a venv with its own pip (python -m venv), then the lock's
    packages but the project and its own pypaimon and rocksdict, offline from uv's cache (pyspark is an sdist:
    ``uv pip install`` online rebuilds it, ~40 s)."""
    _run([sys.executable, "-m", "venv", str(venv)], env=_env())
    _run([*_uv(), "sync", "--frozen", "--offline", "--inexact", "--no-dev", "--no-install-project",
          "--no-install-package", "pypaimon", "--no-install-package", "rocksdict", "--no-compile-bytecode", "-q"],
         cwd=ROOT, env={**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)})


def pip_refuses(venv: Path, wheel: Path) -> str:
    """``pip install <wheel>`` into the existing Airflow (PyPI): it must fail naming the conflict and change nothing.
    (With the old metadata, "apache-airflow>=3.2.1", pip exited 0 after downgrading Airflow to 3.2.1.)"""
    before = installed(venv)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", str(wheel)], capture_output=True,
                          text=True, env=_env(), cwd=wheel.parent)
    output, after = done.stdout + done.stderr, installed(venv)
    changed = {name: (version, after.get(name)) for name, version in before.items() if after.get(name) != version}
    assert done.returncode != 0, f"pip installed the wheel, changing {changed}"
    assert "ResolutionImpossible" in output, output[-3000:]
    assert re.search(r"airflow-paimon [\d.]+ depends on cachetools>=6", output), output[-3000:]
    assert re.search(r"pypaimon [\d.]+ depends on cachetools<6", output), output[-3000:]
    assert after == before
    return output


def install_wheel(venv: Path, work: Path) -> dict[str, float]:
    """The documented route: the wheel into an existing Airflow 3.3.2 — pip refuses, uv with the override installs
    it without changing any installed version. uv installs the lock's versions (``-c``), which ``uv sync --frozen``
    left in its cache; pip asks PyPI. Returns each step's seconds."""
    seconds, started = {}, time.monotonic()

    def step(name):
        nonlocal started
        seconds[name], started = round(time.monotonic() - started, 1), time.monotonic()

    _run([*_uv(), "build", "--wheel", "-o", str(work / "dist")], cwd=ROOT)
    wheel = next((work / "dist").glob("airflow_paimon-*.whl"))
    pins = work / "lock-pins.txt"
    _run([*_uv(), "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes", "-q", "-o", str(pins)],
         cwd=ROOT)
    existing_airflow(venv)
    step("existing airflow")
    bundled = installed(venv)["pip"]
    pip_refuses(venv, wheel)
    step(f"pip {bundled} refuses")
    if bundled != NEWEST_PIP:
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"pip=={NEWEST_PIP}"], env=_env())
        pip_refuses(venv, wheel)
        step(f"pip {NEWEST_PIP} refuses")

    before = installed(venv)
    assert before["apache-airflow-core"] == AIRFLOW and int(before["cachetools"].split(".")[0]) >= 6, before
    assert "pypaimon" not in before and "airflow-paimon" not in before, before
    # The command of the docs ("Install"), plus the lock's pins: the override replaces pypaimon's cachetools<6, the
    # installed Airflow is pinned so that uv fails rather than changes it, pyspark is pyspark-client's release.
    overrides = work / "overrides.txt"
    overrides.write_text("cachetools==8.0.1\n")
    _run([*_uv(), "pip", "install", "--python", str(venv / "bin" / "python"), "--override", str(overrides),
          str(wheel), f"apache-airflow=={AIRFLOW}", "pyspark==4.2.0", "pyspark-client==4.2.0", "-c", str(pins)],
         cwd=work)
    step("uv route")
    after = installed(venv)
    assert {name: after.get(name) for name in before} == before, "the uv route changed an installed version"
    assert "airflow-paimon" in after and "pypaimon" in after
    # pip check names the override, and nothing else
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True,
                           env=_env())
    problems = [line for line in check.stdout.splitlines() if line.strip()]
    assert len(problems) == 1 and re.match(r"pypaimon [\d.]+ has requirement cachetools<6", problems[0]), check.stdout
    return seconds


def test_wheel_installed_into_an_existing_airflow_runs_a_dag(tmp_path):
    started = time.monotonic()
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    steps = install_wheel(venv, work)
    installed_in = time.monotonic() - started

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
    env = _env()
    env.update({
        "AIRFLOW_HOME": str(work / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(work / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{work / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "extra": {"warehouse": str(warehouse)}}),
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
    print(f"install {installed_in:.1f} s {steps}, total {time.monotonic() - started:.1f} s")
