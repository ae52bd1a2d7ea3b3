"""The job environment's tools (airflow_paimon/job_env): which requirements it installs, and that a packed venv
runs from wherever it is unpacked (as spark.archives unpacks it on an executor)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile

import pytest

from airflow_paimon.job_env import JobEnv, NoJobEnvironment, has_job_side, job_python, resolve_job_env, runs_here
from airflow_paimon.job_env.build import jobs_requirements, pack


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
