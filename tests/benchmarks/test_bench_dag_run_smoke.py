"""The DAG-run benchmarks (bench_connect, bench_job_env, bench_many_tables) in seconds: each module imported as
its run imports it (in a process of its own: it points Airflow at a throw-away home on import), its DAG files
written and parsed by Airflow, its summary recomputed from the runs of its newest recorded result
(tests/benchmarks/results/) and equal to the figures recorded there, its report rendered from them.

What their runs drive — the write tasks in Connect and spark-submit mode, the example's daily DAG with a job
environment, many ``paimon_upsert`` groups under a LocalExecutor — is what the DAG, install and scheduler tests
run end to end; a smoke run of a benchmark took minutes (the servers and spark-submits), so it is left to the
benchmark itself."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import processes

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def newest(name: str, mode: str | None = None) -> Path:
    """The newest recorded result file ``name`` (with ``mode`` among its modes, if given)."""
    found = []
    for path in sorted(RESULTS.rglob(name)):
        if mode is None or mode in json.loads(path.read_text()).get("modes", {}):
            found.append(path)
    assert found, f"no recorded {name} under {RESULTS}"
    return max(found, key=lambda p: json.loads(p.read_text())["meta"]["date"])


def run_benchmark_code(code: str) -> dict:
    """``code`` in a fresh interpreter with tests/benchmarks on the path; the JSON it prints last."""
    done = processes.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r})\n{code}"],
                         capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_connect_benchmark_dag_summary_and_report():
    recorded = newest("connect_write.json")
    out = run_benchmark_code(f"""
import json, shutil
from pathlib import Path
import bench_connect as b
from airflow.dag_processing.dagbag import DagBag
try:
    (b.DAGS / f"{{b.DAG_ID}}.py").write_text(b.DAG_FILE)
    bag = DagBag(dag_folder=str(b.DAGS))
    saved = json.loads(Path({str(recorded)!r}).read_text())
    medians = {{mode: b.median(runs) for mode, runs in saved["runs"].items()}}
    print(json.dumps({{"errors": {{k: str(v) for k, v in bag.import_errors.items()}},
                      "tasks": sorted(t.task_id for t in bag.dags[b.DAG_ID].tasks),
                      "medians": {{m: r["wall_s"] for m, r in medians.items()}},
                      "report": b.report(saved, saved["meta"])}}))
finally:
    shutil.rmtree(b._HOME, ignore_errors=True)
""")
    saved = json.loads(recorded.read_text())
    assert out["errors"] == {} and out["tasks"] == ["assign_and_write", "bootstrap_index", "commit"]
    assert out["medians"] == {mode: m["wall_s"] for mode, m in saved["median"].items()}
    for mode, m in saved["median"].items():
        assert f"| {m['wall_s']} |" in out["report"], (mode, out["report"])


def test_job_env_benchmark_summary_report_and_process_starts(tmp_path):
    """The job environment's process starts measured for real (another path to this interpreter as the job
    environment's Python: a real one takes a minute to create), the rest from the recorded runs."""
    recorded = newest("job_env.json")
    job_python = tmp_path / "job-env-python"
    job_python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    job_python.chmod(0o755)
    out = run_benchmark_code(f"""
import json, shutil
from pathlib import Path
import bench_job_env as b
try:
    saved = json.loads(Path({str(recorded)!r}).read_text())
    starts = b.process_starts({str(job_python)!r}, 1, b._HOME / "wh-steps")
    print(json.dumps({{"summary": {{m: b.summary(saved["runs"][m]) for m in saved["median"]}}, "starts": starts,
                      "report": b.report(saved, saved["meta"])}}))
finally:
    shutil.rmtree(b._HOME, ignore_errors=True)
""")
    saved = json.loads(recorded.read_text())
    assert out["summary"] == saved["median"]
    assert len(out["starts"]) == 3 and all(0 < s < 120 for s in out["starts"].values()), out["starts"]
    for mode, m in saved["median"].items():
        assert f"| {mode} | {m['first_run_s']} | {m['daily_run_s']} |" in out["report"], out["report"]


def test_many_tables_benchmark_dags_summary_and_report():
    recorded = [newest("many_tables.json", mode) for mode in ("connect", "airflow")]
    out = run_benchmark_code(f"""
import json, shutil
from pathlib import Path
import bench_many_tables as b
try:
    dags = {{**{{f"many_{{n}}": d for n, d in b.write_dags({{1, 3}}).items()}},
             **{{f"floor_{{n}}": d for n, d in b.write_dags({{3}}, floor="airflow").items()}},
             **{{f"passthrough_{{n}}": d for n, d in b.write_dags({{3}}, floor="passthrough").items()}}}}
    reports, ratios = [], {{}}
    for path in {[str(p) for p in recorded]!r}:
        saved = json.loads(Path(path).read_text())
        reports.append(b.report(saved, saved["meta"]))
        ratios.update({{mode: b.ratio_of(r["one"], r["many"]) for mode, r in saved["modes"].items()}})
    print(json.dumps({{"tasks": {{k: sorted(t.task_id for t in d.tasks) for k, d in dags.items()}},
                      "ratios": ratios, "reports": reports,
                      "most_at_once": b.max_concurrent([(0, 4), (1, 2), (2, 3), (3, 5), (5, 6)])}}))
finally:
    shutil.rmtree(b._HOME, ignore_errors=True)
""")
    steps = ["assign_and_write", "bootstrap_index", "commit", "compact"]
    assert out["tasks"]["many_1"] == [f"db_t00.{s}" for s in steps], out["tasks"]
    assert len(out["tasks"]["many_3"]) == 12 and {t.split(".")[0] for t in out["tasks"]["many_3"]} == {
        "db_t00", "db_t01", "db_t02"}
    assert sorted(t.split(".")[-1] for t in out["tasks"]["floor_3"]) == sorted(steps * 3)
    assert out["tasks"]["passthrough_3"] == out["tasks"]["many_3"]
    assert out["most_at_once"] == 2  # (0,4) with (1,2), then (2,3), then (3,5): an end frees its slot first
    for path, text in zip(recorded, out["reports"]):
        saved = json.loads(path.read_text())
        for mode, r in saved["modes"].items():
            assert out["ratios"][mode] == r["ratio"]
            assert f"| {mode} | {r['one']['span_s']} | {r['many']['span_s']} | {r['ratio']} |" in text, text


def test_many_tables_benchmark_splits_an_executor_workers_cpu():
    """ProcessCpu counts a worker's own CPU as its supervisor's and its children's, reaped or running, as its task
    processes': a child that burns ~0.6 CPU s and exits, then the worker burning ~0.3 s itself."""
    out = run_benchmark_code("""
import json, shutil, subprocess, sys, time
import bench_many_tables as b
BURN = "import time, sys\\nend = time.process_time() + float(sys.argv[1])\\nwhile time.process_time() < end: pass"
WORKER = ("import subprocess, sys\\nsubprocess.run([sys.executable, '-c', sys.argv[1], '0.6'])\\n"
          "exec(sys.argv[1].replace('sys.argv[1]', '0.3'))")
try:
    with b.ProcessCpu(interval=0.05) as cpu:
        subprocess.run([sys.executable, "-c", WORKER, BURN], check=True)
        time.sleep(0.1)
    print(json.dumps(cpu.split()))
finally:
    shutil.rmtree(b._HOME, ignore_errors=True)
""")
    assert 0.5 <= out["task processes"] <= 1.0, out  # the child's 0.6 s and its interpreter's start
    assert 0.25 <= out["supervisors"] <= 0.7, out  # the worker's 0.3 s and its start
