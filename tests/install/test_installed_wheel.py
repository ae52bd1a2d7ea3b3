"""The package as users get it: an existing Airflow 3.3.2 built with plain pip (``pip install
"apache-airflow==3.3.2" apache-airflow-providers-apache-spark pyspark==4.2.0``, from the package index); plain
``pip install`` of the wheel only adds packages (``pip freeze`` before and after); the job environment is created
with the documented command (``python -m airflow_paimon.job_env create PATH``); a three-task upsert DAG runs from
a directory without the checkout with ``python -I``, its Paimon steps and Spark jobs in the job environment, and
its table reads back equal to the oracle; the job environment packed with the documented command
(``python -m airflow_paimon.job_env pack``) and a third run on a Spark standalone cluster on loopback whose
workers' own Python has none of the provider, pypaimon or rocksdict: its executors run from the archive
(``spark.archives``); a fourth on a Spark Connect server started with the provider's launcher from the user's
Airflow, its Python workers and the task's Connect client in the job environment. On Python 3.12 where pyenv has
it, else on this Python.

The provider's install, the job environment and the class-data-sharing archives are made by the worker image's
recipe, the Dockerfile block of docs/install.md read from the page and run line by line (``recipe_steps``: the
lines that only make sense in a Docker build mapped as the page says), so the recipe cannot drift; the DAG runs
then start with an empty home and cache (as a new pod from the image has): no first-run penalty, no warm-up.

The user's Airflow venv is built once per Python and version set, under a cache directory
(AIRFLOW_PAIMON_TEST_CACHE, default the system temp directory), and hard-link copied for each run."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from airflow_paimon.engine.table.table import get_table
from oracle import assert_table_equals, expected_upsert
from spark_cluster import executor_dirs, standalone_cluster
from spark_connect import connection, running_connect_server

pytestmark = [pytest.mark.install, pytest.mark.dag, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[2]


def _uv() -> list[str]:
    """The uv that runs the tests (``uv run`` exports it as UV), else the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if not found:
        pytest.skip("uv not found (run the tests through `uv run`)")
    return [found]

DAG_FILE = '''
import os, tempfile
import pendulum
from airflow.sdk import DAG
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)


def pod_per_task(context):
    """A run with pod_per_task: each task starts with a new, empty home and cache, as a new pod from the image."""
    if context["params"].get("pod_per_task"):
        home = tempfile.mkdtemp(prefix=context["task"].task_id + "-", dir=os.environ["POD_HOMES"])
        os.environ.update(HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))

SCHEMA = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
          "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}}
with DAG("installed_upsert", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         params={"source": "", "pod_per_task": False}, default_args={"pre_execute": pod_per_task}) as dag:
    (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="db.t", table_schema=SCHEMA, shards=2)
     >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="db.t", source="{{ params.source }}")
     >> PaimonCommitOperator(task_id="commit", table="db.t"))
'''

RUNNER = '''
import importlib.util, json, subprocess, sys
from pathlib import Path
import airflow_paimon
from airflow_paimon.spark.job_registry import JOBS
from airflow_paimon.spark.backends import entry_script

assert importlib.util.find_spec("pypaimon") is None, "the user's Airflow must not have the job side"
assert Path(airflow_paimon.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), airflow_paimon.__file__
job = entry_script(JOBS["assign_and_write"])
assert Path(job).resolve().is_relative_to(Path(sys.prefix).resolve()), job
# python -m, not bin/airflow: the venv is a copy, its scripts' shebangs name the original
subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, stdout=subprocess.DEVNULL)
sys.path.insert(0, sys.argv[1])
from installed_dag import dag
for i, source in enumerate(sys.argv[2:]):  # the first run with a new home per task (a pod per task)
    run = dag.test(run_conf={"source": source, "pod_per_task": i == 0})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    seconds = {ti.task_id: ti.duration for ti in run.get_task_instances()}
    print(json.dumps({"state": run.state, "tasks": states, "seconds": seconds, "job": job}))
'''


AIRFLOW = "3.3.2"
# What a user types (docs: Install), plain pip from the package index.
USER_AIRFLOW = [f"apache-airflow=={AIRFLOW}", "apache-airflow-providers-apache-spark", "pyspark==4.2.0"]
PYTHON_312 = Path("/root/.pyenv/versions/3.12.1/bin/python3.12")


def _run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


def _env() -> dict[str, str]:
    """The environment without the checkout's venv (uv run exports VIRTUAL_ENV and puts its bin first on PATH)
    and without the suite's JVM options (tests/conftest.py): a user's JVMs start as Spark starts them."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "PYTHON", "VIRTUAL_ENV", "UV_", "SPARK_SUBMIT_OPTS"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if str(ROOT) not in p)
    return env


def freeze(venv: Path) -> dict[str, str]:
    """``pip freeze`` of the venv: name -> version."""
    done = _run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all", "--disable-pip-version-check"],
                env=_env())
    found = {}
    for line in done.stdout.splitlines():
        name, _, version = line.partition("==")
        if not version:  # "name @ file://..." (a wheel installed from a path)
            name, _, version = line.partition(" @ ")
        found[name.strip().lower().replace("_", "-")] = version.strip()
    return found


def user_airflow(python: str, into: Path) -> float:
    """``into``: a hard-link copy of the user's Airflow venv for ``python``, built once with plain pip under the
    cache directory (keyed by the Python and the requirements). Returns the seconds the build took (0: cached)."""
    version = _run([python, "-c", "import sys; print(sys.version.split()[0])"]).stdout.strip()
    key = hashlib.sha256(json.dumps([version, USER_AIRFLOW]).encode()).hexdigest()[:12]
    cache_root = Path(os.environ.get("AIRFLOW_PAIMON_TEST_CACHE", tempfile.gettempdir()))
    cache = cache_root / f"airflow-paimon-user-airflow-{key}"
    seconds = 0.0
    if not (cache / "complete").exists():
        started = time.monotonic()
        shutil.rmtree(cache, ignore_errors=True)
        _run([python, "-m", "venv", str(cache / "venv")], env=_env())
        # --no-compile: the same packages and files, without byte-compiling every module of ~150 distributions up
        # front (a third of the build's time here); Python compiles what is imported when it is
        _run([str(cache / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              "--no-compile", *USER_AIRFLOW], env=_env())
        seconds = time.monotonic() - started
        (cache / "complete").write_text(f"{version} {USER_AIRFLOW} built in {seconds:.0f} s\n")
    # pip only adds files here (what the test checks), so the cached venv's files are never changed through a link
    _run(["cp", "-al", str(cache / "venv"), str(into)])
    return seconds


DOCKERFILE = re.compile(r"```dockerfile\n(.*?)```", re.DOTALL)
# The recipe's paths in the image -> the test's directories (under the test's tmp_path)
IMAGE_PATHS = {"/opt/paimon-jobs": "jobs", "/opt/paimon-cds": "cds", "/tmp/": "image-tmp/"}
# The jobs the test's DAG submits to Spark (its bootstrap, of an empty table then an index to reuse, is decided
# without Spark): the recipe's warm-up writes the archives of their kinds here, session and driver-only (each takes
# 15-50 s), which every job of the kind maps
DAG_JOBS = ["assign_and_write", "commit"]


def recipe_steps() -> list[tuple[str, str]]:
    """The worker image's Dockerfile in docs/install.md: (instruction, arguments) per instruction, continuation
    lines joined, comments dropped."""
    blocks = DOCKERFILE.findall((ROOT / "docs" / "install.md").read_text())
    assert len(blocks) == 1, f"docs/install.md has {len(blocks)} dockerfile blocks, not the one recipe"
    text = re.sub(r"\\\n\s*", " ", "\n".join(line for line in blocks[0].splitlines()
                                         if not line.lstrip().startswith("#")))
    return [tuple(line.strip().split(None, 1)) for line in text.splitlines() if line.strip()]  # type: ignore


def run_recipe(venv: Path, wheel: Path, root: Path, python_version: str,
               seconds: dict) -> dict[str, str]:
    """Run the recipe's steps in ``root`` with ``venv`` (the user's pip-built Airflow) standing for the official
    image, as docs/install.md says each Docker-only line is mapped; the ENV it set (paths mapped). Each command's
    seconds go into ``seconds``."""
    paths = re.compile("|".join(map(re.escape, IMAGE_PATHS)))

    def mapped(text: str) -> str:  # in one pass: a mapped path (under /tmp) is not mapped again
        return paths.sub(lambda m: f"{root}/{IMAGE_PATHS[m.group()]}", text).replace("${AIRFLOW_VERSION}", AIRFLOW)

    (root / "image-tmp").mkdir(parents=True)
    image_env: dict[str, str] = {}
    users = []
    for instruction, args in recipe_steps():
        if instruction == "FROM":
            assert args == f"apache/airflow:{AIRFLOW}-python{python_version}" or python_version != "3.12", args
            assert args.startswith(f"apache/airflow:{AIRFLOW}-python3."), args
        elif instruction == "USER":
            users.append(args)
        elif instruction == "COPY":
            source, target = args.split()[-2:]
            assert source == wheel.name, f"the recipe copies {source}, the wheel is {wheel.name}"
            shutil.copy(wheel, mapped(target))
        elif instruction == "ENV":
            image_env.update(dict(pair.split("=", 1) for pair in mapped(args).split()))
        elif instruction == "RUN":
            for command in (c.strip() for c in mapped(args).split("&&")):
                if command.startswith("apt-get install"):
                    assert "openjdk-17" in command, command
                    java = _run(["java", "-version"], env=_env())
                    assert 'version "17.' in java.stderr, java.stderr
                elif command.startswith(("apt-get", "rm -rf /var/lib/apt/lists", "chown ")):
                    continue  # the package lists, the image's user: nothing of them in a directory
                else:
                    if "airflow_paimon.spark.warm_up" in command:
                        command += " --jobs " + " ".join(DAG_JOBS)
                    env = {**_env(), **image_env}
                    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"  # the image's python
                    started = time.monotonic()
                    _run(["bash", "-c", command], env=env, cwd=root)
                    seconds[f"recipe: {' '.join(command.split()[:4])[:60]}"] = round(time.monotonic() - started, 1)
        else:
            raise AssertionError(f"the recipe's {instruction} has no mapping here: add one (docs/install.md)")
    assert users and users[-1] not in ("root", "0"), f"the image must end as a non-root user: {users}"
    return image_env


def build_wheel(work: Path) -> Path:
    _run([*_uv(), "build", "--wheel", "-o", str(work / "dist")], cwd=ROOT)
    return next((work / "dist").glob("airflow_paimon-*.whl"))


# The whole route once, on Python 3.12 (the official Airflow image's default) where pyenv has it: the rest of the
# suite runs this repo's Python 3.11, and a second route costs a pip-built Airflow and a DAG run more (~10 min).
PYTHONS = [str(PYTHON_312) if PYTHON_312.exists() else sys.executable]


@pytest.mark.parametrize("python", PYTHONS)
def test_plain_pip_into_an_existing_airflow_changes_nothing_and_a_dag_runs(python, tmp_path):
    seconds, started = {}, time.monotonic()

    def step(name):
        nonlocal started
        seconds[name], started = round(time.monotonic() - started, 1), time.monotonic()

    venv, work, image = tmp_path / "airflow", tmp_path / "work", tmp_path / "image"
    job_env = image / "jobs"
    work.mkdir()
    wheel = build_wheel(work)
    step("wheel")
    built = user_airflow(python, venv)
    step("user airflow (cached)" if not built else "user airflow (plain pip, built)")
    before = freeze(venv)
    assert before["apache-airflow-core"] == AIRFLOW and "pypaimon" not in before, before
    python_version = _run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
    # the worker image's recipe (docs/install.md), line by line: the provider added with pip (the Airflow version
    # named), the job environment (the documented command), the class-data-sharing archives
    image_env = run_recipe(venv, wheel, image, python_version, seconds)
    step("the image recipe: pip install, job env create, warm-up")
    assert image_env["AIRFLOW__PAIMON__JOB_PYTHON"] == str(job_env / "bin" / "python"), image_env
    archives = sorted(p.name for p in Path(image_env["AIRFLOW_PAIMON_CDS_DIR"]).glob("*.jsa"))
    assert [a.rsplit("-", 1)[0] for a in archives] == ["driver-only", "session"], archives
    after = freeze(venv)
    changed = {n: (v, after.get(n)) for n, v in before.items() if after.get(n) != v}
    assert changed == {}, f"installing the provider changed {changed}"
    assert set(after) - set(before) == {"airflow-paimon"}, set(after) - set(before)
    check = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True,
                           env=_env())
    assert check.returncode == 0, check.stdout

    jobs = freeze(job_env)
    assert "pypaimon" in jobs and "apache-airflow" not in jobs and "airflow-paimon" in jobs, jobs
    assert int(jobs["pandas"].split(".")[0]) < 3  # pypaimon's pins live here, not in Airflow's environment
    # the job side's versions are the shipped constraints' (uv.lock's), whatever the day
    shipped = (ROOT / "airflow_paimon" / "job_env" / "constraints.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in shipped if not line.startswith("#"))
    assert {n: jobs[n] for n in pins if n in jobs} == {n: v for n, v in pins.items() if n in jobs}
    assert {"pypaimon", "pyarrow", "pandas", "numpy", "rocksdict", "pyroaring"} <= set(jobs) & set(pins)

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
    env = {**_env(), **image_env}
    # a worker's home, empty (the archives are the image's, AIRFLOW_PAIMON_CDS_DIR); the first run's tasks each get
    # a new one under pod_homes (DAG_FILE's pod_per_task)
    home, pod_homes = tmp_path / "worker-home", tmp_path / "pod-homes"
    home.mkdir()
    pod_homes.mkdir()
    env.update({
        "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "POD_HOMES": str(pod_homes),
        "AIRFLOW_HOME": str(work / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(work / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{work / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "extra": {"warehouse": str(warehouse)}}),
    })
    done = _run([str(venv / "bin" / "python"), "-I", "runner.py", str(work / "dags"), *sources], cwd=work, env=env)
    step("two dag runs")
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"state"')]
    assert [r["state"] for r in runs] == ["success", "success"], done.stdout[-3000:] + done.stderr[-3000:]
    assert str(venv) in runs[0]["job"] and "_spark_jobs" in runs[0]["job"]
    output = done.stdout + done.stderr
    assert "commit db.t: snapshot 1 APPEND" in output and "commit db.t: snapshot 2 APPEND" in output, output[-3000:]
    assert "Using Spark's default log4j profile" not in output
    # the bootstrap of the second run decided from table metadata in the job environment, no Spark job
    assert "bootstrap_decide ran in the job environment" in output, output[-3000:]
    # the first run, a new home per task, maps the image's archives: no first-run penalty, no warm-up started
    assert sorted(d.name.split("-")[0] for d in pod_homes.iterdir()) == sorted(runs[0]["tasks"])
    spark_tasks = ["assign_and_write", "commit"]
    first, warm = (sum(r["seconds"][t] for t in spark_tasks) for r in runs)
    seconds["spark tasks: first run (a home per task), second run"] = [round(first, 1), round(warm, 1)]
    # what makes a first run as fast as a later one, shown rather than timed (the time is a figure, printed: a ratio
    # asserted on two cores shared with the rest of the suite failed once at 1.5x): every spark-submit of both runs,
    # the first run's from new homes, mapped the image's archive of its job's kind
    cds = image_env["AIRFLOW_PAIMON_CDS_DIR"]
    submits = [line for line in output.splitlines() if "Spark-Submit cmd:" in line]
    assert len(submits) == len(spark_tasks) * len(runs), submits
    assert all(f"-XX:SharedArchiveFile={cds}/" in line for line in submits), submits
    assert warm_ups(tmp_path) == [], "a warm-up outlived its task"
    assert not list(home.rglob("airflow-paimon")) and not list(pod_homes.rglob("airflow-paimon"))
    assert sorted(p.name for p in Path(image_env["AIRFLOW_PAIMON_CDS_DIR"]).glob("*.jsa")) == archives

    # the cluster route: workers whose own Python has none of the provider get the packed job environment
    archive = work / "job-env.tar.gz"
    _run([str(venv / "bin" / "python"), "-I", "-m", "airflow_paimon.job_env", "pack", str(job_env), str(archive)],
         env=_env(), cwd=work)
    step("job env pack")
    batches.append(pd.DataFrame({"id": [1, 5, 6, 7], "dt": ["b", "b", "a", "b"], "v": [10.0, 500.0, 6.0, 7.0]}))
    sources.append(str(work / "batch2.parquet"))
    batches[-1].to_parquet(sources[-1], index=False)
    runs.extend(_run_on_cluster(python, venv, archive, work, env, sources[-1]))
    step("dag run on a standalone cluster")
    # Spark Connect apart from Airflow: the server started by the provider's launcher from the user's Airflow, its
    # Python workers the job environment's; the task's Connect client runs in the job environment too
    batches.append(pd.DataFrame({"id": [2, 6, 8], "dt": ["a", "b", "b"], "v": [200.0, 600.0, 8.0]}))
    sources.append(str(work / "batch3.parquet"))
    batches[-1].to_parquet(sources[-1], index=False)
    (work / "connect").mkdir()
    with running_connect_server(work / "connect", python=str(venv / "bin" / "python"), env=env,
                                workers=str(job_env / "bin" / "python")) as server:
        done = _run([str(venv / "bin" / "python"), "-I", "runner.py", str(work / "dags"), sources[-1]], cwd=work,
                    env={**env, "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(connection(server))})
    on_connect = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"state"')]
    assert [r["state"] for r in on_connect] == ["success"], done.stdout[-3000:] + done.stderr[-3000:]
    assert "connect_job ran in the job environment" in done.stdout + done.stderr, done.stderr[-3000:]
    runs.extend(on_connect)
    step("dag run on a Spark Connect server")

    table = get_table({"warehouse": str(warehouse)}, "db.t")
    expected = expected_upsert(batches, "id")
    assert_table_equals(table, expected, "id")
    read = table.new_read_builder()
    rows = read.new_read().to_pandas(read.new_scan().plan().splits())
    assert not rows["id"].duplicated().any() and len(rows) == len(expected)
    assert len(table.snapshot_manager().list_snapshots()) == 4
    print(f"{python}: {seconds}")


def warm_ups(under: Path) -> list[str]:
    """Command lines of running warm-ups (spark/warm_up.py) started for anything under ``under``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "airflow_paimon.spark.warm_up" in cmd and str(under) in cmd:
            found.append(cmd)
    return found


def _run_on_cluster(python: str, venv: Path, archive: Path, work: Path, env: dict, source: str) -> list[dict]:
    """One DAG run on a Spark standalone cluster (the user's pyspark) whose workers' Python is the bare
    ``python`` (the base of a venv's): the executors can only run the jobs from the archive (``job_archive``,
    shipped as spark.archives)."""
    python = _run([python, "-c", "import sys; print(sys._base_executable)"]).stdout.strip()  # a venv's base
    bare = _run([python, "-I", "-c", "import importlib.util as u; print([m for m in ('airflow_paimon', 'pypaimon', "
                                     "'rocksdict', 'pyspark') if u.find_spec(m)])"], env=_env()).stdout.strip()
    assert bare == "[]", f"the workers' Python {python} has {bare}"
    spark_class = next(venv.glob("lib/python*/site-packages/pyspark/bin/spark-class"))
    root = work / "cluster"
    root.mkdir()
    conf_dir = work / "spark-conf"  # executors of 512 MB fit the 1 GB workers
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.executor.memory 512m\nspark.cores.max 2\n")
    with standalone_cluster(root, spark_class, worker_env={"PYSPARK_PYTHON": python}) as cluster:
        cluster_env = {**env, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(conf_dir),
                       "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
                           {"conn_type": "spark", "host": cluster["master"],
                            "extra": {"deploy-mode": "client", "job_archive": str(archive)}})}
        done = _run([str(venv / "bin" / "python"), "-I", "runner.py", str(work / "dags"), source], cwd=work,
                    env=cluster_env)
        runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"state"')]
        assert [r["state"] for r in runs] == ["success"], done.stdout[-3000:] + done.stderr[-3000:]
        # every executor unpacked the archive as ./env and ran its Python from there
        executors = executor_dirs(cluster)
        assert {d.parents[2].name for d in executors} == {"worker0", "worker1"}, executors
        for d in executors:
            assert (d / "env" / "bin" / "python").exists(), sorted(p.name for p in d.iterdir())
    return runs
