"""The many-tables benchmark at a tiny size (a file of its own: it is one of the suite's longest, and
pytest-xdist spreads files)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import processes

HERE = Path(__file__).resolve().parent


@pytest.mark.spark
def test_many_tables_benchmark_smoke(tmp_path):
    """Two tables and one in Connect mode, through the LocalExecutor and a real api-server, in a process of its
    own (it sets up Airflow's environment): the two tables' tasks overlap, every table checked, the report
    written."""
    out = tmp_path / "out"
    done = processes.run([sys.executable, str(HERE / "bench_many_tables.py"),
                          "--tables", "2", "--rows", "2000", "--batch", "200", "--parallelism", "4",
                          "--modes", "connect", "airflow", "--cold", "--out", str(out)],
                         capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    saved = json.loads((out / "many_tables.json").read_text())
    r = saved["modes"]["connect"]
    assert saved["meta"]["parallelism"] == 4 and saved["tables"] == 2
    assert r["many"]["max_concurrent_tasks"] == 2 and r["one"]["max_concurrent_tasks"] == 1
    for run in (r["one"], r["many"]):
        assert run["state"] == "success" and not run["failed"] and run["tree_peak_rss_gib"] > 0.1
        assert set(run["task_median_s"]) == {"bootstrap_index", "assign_and_write", "commit", "compact"}
    assert 0 < r["one"]["span_s"] <= r["one"]["wall_s"] and r["ratio"] > 0
    assert "| connect |" in (out / "many_tables.md").read_text()
    floor = saved["modes"]["airflow"]  # the same shape with no-op tasks
    assert floor["many"]["max_concurrent_tasks"] == 2 and not floor["many"]["failed"]
    assert set(floor["many"]["task_median_s"]) == {"bootstrap_index", "assign_and_write", "commit", "compact"}
