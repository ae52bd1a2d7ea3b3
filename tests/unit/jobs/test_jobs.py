"""The table of jobs (airflow_paimon/spark/job_registry.py) is whole and agrees with everything that reads it: every
job has its entry script, spec and result types, progress formatter and Spark function, every Spark-job
operator names a job of the table and builds its spec type; and the submission backends
(airflow_paimon/spark/backends.py) are picked by the Spark connection's type."""
from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from airflow.exceptions import AirflowException

from airflow_paimon.spark.job_registry import JOBS, progress_line
from airflow_paimon.engine.jobs.specs import JobSpec, Wire

ROOT = Path(__file__).resolve().parents[3]
OPERATOR_MODULES = ["airflow_paimon.operators.paimon", "airflow_paimon.operators.compact",
                    "airflow_paimon.operators.incremental", "airflow_paimon.operators.maintenance"]


def spark_job_operators() -> list[type]:
    from airflow_paimon.operators.paimon import PaimonSparkJobOperator

    for module in OPERATOR_MODULES:
        importlib.import_module(module)
    found, frontier = [], [PaimonSparkJobOperator]
    while frontier:
        for sub in frontier.pop().__subclasses__():
            found.append(sub)
            frontier.append(sub)
    return [cls for cls in found if "job" in vars(cls)]


@pytest.mark.parametrize("name", sorted(JOBS))
def test_every_job_has_its_script_types_formatter_and_spark_function(name):
    job = JOBS[name]
    assert job.name == name
    script = ROOT / "spark_jobs" / job.script
    assert script.is_file() and f'run_job("{name}")' in script.read_text(), script
    assert issubclass(job.spec, JobSpec) and issubclass(job.result, Wire) and not issubclass(job.result, JobSpec)
    assert "table" in {f.name for f in dataclasses.fields(job.result)}
    assert typing.get_type_hints(job.describe)["r"] is job.result  # the formatter reads this job's result
    function = job.load()  # the job's own function, for this job's spec
    assert typing.get_type_hints(function)["spec"] is job.spec, function


def test_every_entry_script_is_a_job():
    # and the class-data-sharing warm-up's workload (airflow_paimon/spark/warm_up.py), which is no job
    assert {p.stem for p in (ROOT / "spark_jobs").glob("*.py")} == {*JOBS, "warm_up"}


def test_every_operator_runs_a_job_of_the_table_with_its_spec_type():
    operators = spark_job_operators()
    assert {cls.job for cls in operators} == set(JOBS)  # and no job without its operator
    for cls in operators:
        assert typing.get_type_hints(cls.job_spec)["return"] is JOBS[cls.job].spec, cls


def test_progress_line_of_a_job_outside_the_table_lists_the_fields():
    assert progress_line("other_job", {"table": "db.t", "rows": 3}, 1.25) == "other-job db.t: rows 3, 1.2 s"


_IMPORTED = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("airflow_paimon", "airflow.")) or m == "airflow")))
"""


def modules_after_importing(module: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _IMPORTED, module], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_connect_client_imports_no_job_frame_and_the_server_no_operator_nor_airflow():
    assert "airflow_paimon.spark.job_frame" not in modules_after_importing("airflow_paimon.spark.connect")
    server = modules_after_importing("airflow_paimon.spark.connect_server")
    assert not [m for m in server if m.startswith("airflow_paimon.operators") or m.split(".")[0] == "airflow"], server


def package_imports() -> dict[str, set[str]]:
    """module -> the package's modules it imports, at module level or inside a function."""
    files = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
             for p in (ROOT / "airflow_paimon").rglob("*.py")}
    graph = {}
    for module, path in files.items():
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in files else node.module
                          for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        graph[module] = {name for name in names if name in files and name != module}
    return graph


# The modules that submit and run jobs: spark/job_frame.py and spark/connect.py once imported each other.
JOB_RUNNING = ("airflow_paimon.spark", "airflow_paimon.operators")


def test_no_import_cycle_where_jobs_are_run_not_even_through_a_function_level_import():
    graph = {module: {dep for dep in deps if dep.startswith(JOB_RUNNING)}
             for module, deps in package_imports().items() if module.startswith(JOB_RUNNING)}
    cycles, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        for dep in graph[module]:
            if dep in path:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in done:
                visit(dep, path + [dep])
        done.add(module)

    for module in graph:
        if module not in done:
            visit(module, [module])
    assert cycles == []


@pytest.fixture
def spark_connection(monkeypatch):
    def use(conn_type: str, **extra):
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", json.dumps({"conn_type": conn_type, "host": "local[1]",
                                                                  "extra": extra}))
        return "spark_test"
    return use


def test_the_connection_type_picks_the_backend(spark_connection):
    from airflow_paimon.job_env import JobEnv
    from airflow_paimon.spark.backends import ConnectBackend, SparkSubmitBackend, backend_for

    submit = backend_for(JOBS["compact"], "db.t", spark_connection("spark"), JobEnv(), {})
    assert isinstance(submit, SparkSubmitBackend) and submit.master == "local[1]"
    assert isinstance(backend_for(JOBS["compact"], "db.t", spark_connection("spark_connect"), JobEnv(), {}),
                      ConnectBackend)
    submit.kill()  # nothing submitted yet: nothing to stop


def test_cluster_deploy_mode_is_refused_before_anything_runs(spark_connection):
    from airflow_paimon.job_env import JobEnv
    from airflow_paimon.spark.backends import backend_for

    with pytest.raises(AirflowException, match="compact for table db.t: cluster deploy mode is not supported"):
        backend_for(JOBS["compact"], "db.t", spark_connection("spark", **{"deploy-mode": "cluster"}), JobEnv(), {})


def test_the_write_operators_keep_the_class_path_dags_know_them_by():
    """operators/paimon.py re-exports the write operators from the modules of their jobs (write.py, spark_job.py,
    upstream.py); Airflow records a task's class by its module (the serialized DAG's task module, the REST API's
    class_ref, the task logger's name, OpenLineage's ``disabled_for_operators``), which stays operators.paimon."""
    import airflow_paimon.operators.paimon as public

    assert all(getattr(public, name, None) is not None for name in public.__all__)
    for cls in (public.PaimonSparkJobOperator, public.PaimonBootstrapIndexOperator,
                public.PaimonAssignAndWriteOperator, public.PaimonCommitOperator):
        assert cls.__module__ == public.__name__ and getattr(public, cls.__name__) is cls
    task = public.PaimonCommitOperator(task_id="c", table="db.t")
    assert task.log.name.endswith("airflow_paimon.operators.paimon.PaimonCommitOperator"), task.log.name
