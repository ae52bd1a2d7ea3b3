"""The DAG-run benchmarks at a tiny size: bench_connect (write tasks in Connect and spark-submit mode) and
bench_job_env (the example's daily DAG with and without a job environment)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import processes

HERE = Path(__file__).resolve().parent


@pytest.mark.spark
def test_dag_run_benchmark_smoke(tmp_path):
    """bench_connect (the DAG run's write tasks through dag.test in both modes, pypaimon-rust beside them) on a
    2,000-row table, in a process of its own (it sets up Airflow's environment): every mode's run checked by the
    benchmark's guard, the report written."""
    out = tmp_path / "out"
    done = processes.run([sys.executable, str(HERE / "bench_connect.py"),
                          "--rows", "2000", "--batch", "200", "--repeat", "1",
                          "--modes", "connect", "submit", "pypaimon-rust", "--out", str(out)],
                         capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    saved = json.loads((out / "connect_write.json").read_text())
    assert set(saved["median"]) == {"connect", "submit", "pypaimon-rust"}
    for mode in ("connect", "submit"):
        m = saved["median"][mode]
        assert m["wall_s"] > 0 and m["pypaimon_rust_over_ours"] > 0
        assert set(m["tasks_s"]) == {"bootstrap_index", "assign_and_write", "commit"}
    assert "| ours, spark-submit mode |" in (out / "connect_write.md").read_text()


@pytest.mark.spark
def test_job_env_benchmark_smoke(tmp_path):
    """bench_job_env with one round of two daily runs per mode; its job environment another path to this
    interpreter (a real one is created by the benchmark itself, ~1 min): the steps run as processes there."""
    job_python = tmp_path / "job-env-python"
    job_python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    job_python.chmod(0o755)
    out = tmp_path / "out"
    done = processes.run([sys.executable, str(HERE / "bench_job_env.py"), "--repeat", "1", "--days", "2",
                          "--rows-per-day", "200", "--starts", "1", "--job-python", str(job_python),
                          "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    saved = json.loads((out / "job_env.json").read_text())
    assert set(saved["median"]) == {"one environment", "job environment"}
    for m in saved["median"].values():
        assert 0 < m["first_run_s"] and 0 < m["daily_run_s"]
        assert set(m["daily_tasks_s"]) == {"bootstrap_index", "assign_and_write", "commit", "compact"}
    assert all(0 < s < 120 for s in saved["process_starts_s"].values()) and len(saved["process_starts_s"]) == 3
    assert "| job environment |" in (out / "job_env.md").read_text()
