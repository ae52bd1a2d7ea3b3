"""Airflow's side imports no job side: every module an Airflow process loads (operators, sensors, triggers, hooks,
the UI plugin, assets, lineage, the TaskGroup factory, the job-environment tools) imports with pypaimon, rocksdict
and pyroaring unimportable, as in a user's Airflow without the ``jobs`` extra. And such a process still runs the
tasks' Paimon steps: in the job environment, through the spec-file/result-file protocol (job_env/step.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "airflow_paimon"
JOB_SIDE_DIRS = ("engine", "spark", "_spark_jobs")  # the job side's own modules (spark/submit.py excepted)
JOB_SIDE_MODULES = {("ui", "tables")}  # read by the UI's steps (ui/steps.py)
AIRFLOW_SIDE_EXTRA = ["airflow_paimon.spark.backends", "airflow_paimon.spark.submit", "airflow_paimon.spark.job_frame",
                      "airflow_paimon.spark.connect"]

# A meta-path finder that refuses the job side, installed before anything else is imported.
_BLOCK = """
import importlib.abc, sys
class _NoJobSide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"pypaimon", "pypaimon_rust", "rocksdict", "pyroaring"}:
            raise ImportError(f"{name} is the job side's")
sys.meta_path.insert(0, _NoJobSide())
"""

_IMPORT_ALL = _BLOCK + """
import importlib, json, traceback
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception:
        failed[name] = traceback.format_exc(limit=-3)
print(json.dumps(failed))
"""


def airflow_side_modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] in JOB_SIDE_DIRS or parts[-1] == "__main__" or parts in JOB_SIDE_MODULES:
            continue
        found.append(".".join(("airflow_paimon", *parts)).removesuffix(".__init__"))
    return found + AIRFLOW_SIDE_EXTRA


@pytest.mark.slow  # every module imported in a fresh interpreter
def test_every_airflow_side_module_imports_without_the_job_side():
    modules = airflow_side_modules()
    assert {"airflow_paimon.operators.paimon", "airflow_paimon.ui.plugin", "airflow_paimon.triggers.paimon",
            "airflow_paimon.job_env.step", "airflow_paimon.table_files"} <= set(modules)
    done = subprocess.run([sys.executable, "-c", _IMPORT_ALL, *modules], capture_output=True, text=True, cwd=ROOT,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert failed == {}, "\n".join(f"{m}:\n{tb}" for m, tb in failed.items())


def test_the_blocker_does_block():  # else the test above proves nothing
    done = subprocess.run([sys.executable, "-c", _BLOCK + "import pypaimon"], capture_output=True, text=True)
    assert done.returncode != 0 and "job side's" in done.stderr


_STEPS = _BLOCK + """
import json, os, time
from airflow_paimon.job_env import resolve_job_env, runs_here
from airflow_paimon.job_env import steps
from airflow_paimon.job_env.step import StepValidationError, run_step
from airflow_paimon.table_files import TableFiles

env = resolve_job_env(None, None)  # [paimon] job_python
assert not runs_here(env), "the job side must look absent here"
warehouse, schema = sys.argv[1], json.loads(sys.argv[2])
options = {"warehouse": warehouse, "fs.s3.accessKeyId": "not-on-argv"}
out = {}
started = time.monotonic()
out["created"] = run_step(steps.create_table, env, catalog_options=options, table="db.t", table_schema=schema)
out["seconds"] = time.monotonic() - started
out["again"] = run_step(steps.create_table, env, catalog_options=options, table="db.t", table_schema=schema)
out["databases"] = run_step(steps.list_databases, env, catalog_options=options)
try:
    run_step(steps.alter_table, env, catalog_options=options, table="db.t", set_options={"bucket": "4"},
             reset_options=[], add_columns=[], widen_columns=[])
except StepValidationError as e:
    out["refused"] = str(e)
out["latest"] = TableFiles(options, "db.t").latest_snapshot_id()
out["fields"] = [f.name for f in TableFiles(options, "db.t").fields]
print(json.dumps(out))
"""


@pytest.mark.slow  # a fresh interpreter running steps in another (the job environment)
def test_a_process_without_the_job_side_runs_steps_in_the_job_environment(tmp_path):
    schema = {"columns": [["id", "BIGINT"], ["v", "STRING"]], "primary_keys": ["id"], "options": {"bucket": "2"}}
    # the job environment: this repo's interpreter, which has the job side (the child only blocks it for itself)
    env = {"PATH": "/usr/bin:/bin", "AIRFLOW__PAIMON__JOB_PYTHON": sys.executable, "AIRFLOW_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _STEPS, str(tmp_path / "wh"), json.dumps(schema)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["created"]["created"] is True and out["again"]["created"] is False
    assert out["databases"] == ["db"]
    assert "bucket" in out["refused"] and "db.t" in out["refused"]  # the job side's refusal, as it was worded
    assert out["latest"] is None and out["fields"] == ["id", "v"]
    print(f"one step in the job environment: {out['seconds']:.2f} s")


@pytest.mark.slow
def test_a_step_that_fails_in_the_job_environment_is_named(tmp_path, monkeypatch):
    from airflow_paimon.job_env import step as step_module
    from airflow_paimon.job_env import steps
    from airflow_paimon.job_env import JobEnv
    from airflow_paimon.job_env.step import StepError, run_step

    monkeypatch.setattr(step_module, "runs_here", lambda extras=None: False)
    monkeypatch.setenv("AIRFLOW__PAIMON__JOB_PYTHON", sys.executable)
    monkeypatch.setattr(step_module, "job_python", lambda extras=None: sys.executable)
    with pytest.raises(StepError, match=r"list_databases: \w+"):
        run_step(steps.list_databases, JobEnv(sys.executable), catalog_options={"warehouse": "nosuchscheme://x/y"})
    with pytest.raises(KeyError, match="is not a job step"):
        run_step(json.dumps, JobEnv(), obj={})


def test_the_job_environment_runs_only_marked_steps_of_this_package():
    """What a spec file names is imported and run there: only this package's functions marked @job_step."""
    from airflow_paimon.job_env import steps
    from airflow_paimon.job_env.step import resolve_step, step_name

    assert resolve_step(step_name(steps.list_databases)) is steps.list_databases
    for name in ("os:system", "airflow_paimon.job_env.step:run_step", "airflow_paimon.job_env.steps:job_step",
                 "airflow_paimon.job_env.steps:nope", "airflow_paimon.job_env.steps", "json:dumps"):
        with pytest.raises(KeyError, match="unknown step"):
            resolve_step(name)
