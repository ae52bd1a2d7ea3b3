"""The job environment's tools (airflow_paimon/job_env): which requirements it installs, under which constraints
(the shipped file is uv.lock's versions), and that a packed venv runs from wherever it is unpacked (as
spark.archives unpacks it on an executor)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

import pytest

from airflow_paimon.job_env import JobEnv, NoJobEnvironment, has_job_side, job_python, resolve_job_env, runs_here
from airflow_paimon.job_env.build import CONSTRAINTS, constraints_python, create, jobs_requirements, pack


def test_the_jobs_extra_is_the_job_side_and_nothing_of_airflow():
    names = {r.split(">")[0].split("=")[0].split("<")[0].split("[")[0] for r in jobs_requirements()}
    assert {"pypaimon", "rocksdict", "pyroaring", "pandas", "pyarrow"} <= names
    assert not any(n.startswith("apache-airflow") for n in names)


def test_this_environment_holds_both_sides_so_steps_run_here(monkeypatch):
    monkeypatch.delenv("AIRFLOW__PAIMON__JOB_PYTHON", raising=False)
    env = resolve_job_env(None, None)
    assert env == JobEnv() and has_job_side() and runs_here(env) and job_python(env) == sys.executable


def test_without_the_job_side_and_no_configuration_the_error_says_what_to_do(monkeypatch):
    monkeypatch.setattr("airflow_paimon.job_env.has_job_side", lambda: False)
    with pytest.raises(NoJobEnvironment, match=r"job_python.*\[paimon\] job_python.*job_env create PATH"):
        job_python(JobEnv())


def test_a_packed_venv_runs_unpacked_elsewhere(tmp_path):
    venv = tmp_path / "made" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(venv)], check=True)
    (venv / "bin" / "tool").write_text(f"#!{venv}/bin/python\nprint('tool')\n")
    site = next((venv / "lib").glob("python3.*")) / "site-packages"
    (site / "marker_mod.py").write_text("VALUE = 42\n")
    archive = pack(venv, tmp_path / "env.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert "pyvenv.cfg" in names and "bin/python" in names  # at the root: ./env/bin/python once unpacked
        assert tar.extractfile("bin/tool").read().startswith(b"#!/usr/bin/env python3\n")
        elsewhere = tmp_path / "executor" / "env"
        tar.extractall(elsewhere, filter="tar")
    shutil.rmtree(tmp_path / "made")  # the original is gone: nothing may point back at it
    done = subprocess.run([str(elsewhere / "bin" / "python"), "-c",
                           "import sys, marker_mod; print(sys.prefix, marker_mod.VALUE)"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(elsewhere), "42"]


def test_pack_refuses_what_is_not_a_venv(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a venv"):
        pack(tmp_path, tmp_path / "x.tar.gz")


def test_the_shipped_constraints_are_the_locks_versions_of_the_job_side():
    """airflow_paimon/job_env/constraints.txt is uv.lock's pin for every package of the jobs extra's tree (regenerate
    with `.venv/bin/python tests/job_env_lock.py` after `uv lock`)."""
    import job_env_lock

    assert CONSTRAINTS.read_text() == job_env_lock.expected(), \
        "constraints.txt differs from uv.lock: run `.venv/bin/python tests/job_env_lock.py`"
    pins = dict(line.split("==") for line in CONSTRAINTS.read_text().splitlines() if not line.startswith("#"))
    # every requirement of the extra is pinned, within its range; the job side's own pins satisfy its packages
    from packaging.requirements import Requirement

    for line in jobs_requirements():
        req = Requirement(line)
        assert req.specifier.contains(pins[req.name], prereleases=True), (line, pins[req.name])
    for name in job_env_lock.JOB_SIDE_OWN:
        bounds = [Requirement(r) for r in metadata.requires("pypaimon") or [] if Requirement(r).name == name]
        assert any(r.marker is None or r.marker.evaluate() for r in bounds)
        assert all(r.specifier.contains(pins[name]) for r in bounds if r.marker is None or r.marker.evaluate())
    assert constraints_python(CONSTRAINTS) == job_env_lock.PYTHONS


def test_create_installs_the_job_side_under_the_constraints_and_refuses_another_python(tmp_path, monkeypatch):
    calls = []
    real_run = subprocess.run

    def run(cmd, *args, **kwargs):
        if cmd[1:3] == ["-m", "venv"]:  # a venv's interpreter without its pip (which the fake installs skip)
            (Path(cmd[-1]) / "bin").mkdir(parents=True)
            (Path(cmd[-1]) / "bin" / "python").symlink_to(sys.executable)
            return subprocess.CompletedProcess(cmd, 0)
        if "platform.python_version()" in " ".join(map(str, cmd)):
            return real_run(cmd, *args, **kwargs)
        calls.append([str(c) for c in cmd])
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr("airflow_paimon.job_env.build.shutil.which", lambda *a, **k: None)  # the venv's pip
    create(tmp_path / "default", provider="airflow-paimon==0.1.0")
    provider, extra = calls[0], calls[1]
    assert "--no-deps" in provider and "--constraint" not in provider
    assert extra[extra.index("--constraint") + 1] == str(CONSTRAINTS.resolve())
    own = tmp_path / "mine.txt"
    own.write_text("pandas==2.2.3\n")
    calls.clear()
    create(tmp_path / "own", provider="airflow-paimon==0.1.0", constraint=own)
    assert calls[1][calls[1].index("--constraint") + 1] == str(own.resolve())
    # a file made for other Pythons is refused before anything is installed
    other = tmp_path / "other.txt"
    other.write_text("# python: <3.0\nnumpy==2.3.5\n")
    calls.clear()
    with pytest.raises(ValueError, match=r"Python <3.0, not 3\.\d+.*--constraint FILE"):
        create(tmp_path / "refused", provider="airflow-paimon==0.1.0", constraint=other)
    assert calls == [] and not (tmp_path / "refused").exists()  # no venv left behind: the same path can be reused
