"""Parsing a DAG file must stay light: the DAG processor imports every DAG file again and again, so the example
DAGs and the modules a DAG imports (operators, sensors, hooks, the TaskGroup factory) must not pull in pypaimon,
pyarrow, pandas, pyspark or rocksdict; the engine is imported when a task runs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("pypaimon", "pyarrow", "pandas", "pyspark", "rocksdict")
NOT_DAGS = {line.strip() for line in (ROOT / "dags" / ".airflowignore").read_text().splitlines() if line.strip()}
EXAMPLE_DAGS = sorted(p for p in (ROOT / "dags").glob("*.py") if p.name not in NOT_DAGS)
MODULES = ["airflow_paimon.operators.paimon", "airflow_paimon.operators.compact",
           "airflow_paimon.operators.maintenance", "airflow_paimon.operators.incremental",
           "airflow_paimon.operators.lifecycle",
           "airflow_paimon.sensors.paimon", "airflow_paimon.hooks.paimon", "airflow_paimon.task_group"]

_IMPORT = """
import importlib, importlib.util, json, sys
heavy, found = set(sys.argv[1].split(",")), {}
for target in sys.argv[2:]:
    if target.endswith(".py"):
        spec = importlib.util.spec_from_file_location("example_dag", target)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    else:
        importlib.import_module(target)
    found[target] = sorted({name.split(".")[0] for name in sys.modules} & heavy)
print(json.dumps(found))
"""


def heavy_imported_by(*targets: str) -> dict[str, list[str]]:
    """Import ``targets`` in turn in one fresh interpreter; per target, the heavy top-level packages in
    ``sys.modules`` after it (the first target to show one is the one that imported it)."""
    done = subprocess.run([sys.executable, "-c", _IMPORT, ",".join(HEAVY), *targets], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, f"importing {targets} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_there_are_example_dags():
    assert {p.name for p in EXAMPLE_DAGS} >= {"paimon_upsert_daily.py", "paimon_upsert_group.py"}


@pytest.mark.slow
@pytest.mark.parametrize("dag_file", EXAMPLE_DAGS, ids=lambda p: p.name)
def test_parsing_an_example_dag_imports_no_heavy_module(dag_file):
    assert heavy_imported_by(str(dag_file)) == {str(dag_file): []}


@pytest.mark.slow
def test_provider_modules_a_dag_imports_are_light():
    assert heavy_imported_by(*MODULES) == {module: [] for module in MODULES}
