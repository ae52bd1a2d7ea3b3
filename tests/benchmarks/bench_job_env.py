"""Benchmark: what a separate job environment costs a DAG run. The example's daily DAG (dags/paimon_upsert_daily.py:
bootstrap-index → assign-and-write → commit → compact, three days of ``demo_batches``) through dag.test(), with
the job side in Airflow's own interpreter ("one environment", this repo's) and in a job environment made by
``python -m airflow_paimon.job_env create`` ("job environment": the Paimon steps become processes there,
spark-submit's driver is its Python), interleaved in one run, each round on a fresh warehouse. Each extra
process start is measured on its own and named: the job environment's interpreter start, its job-side imports,
and one step's round trip (``list_databases``) from this process.

The Connect-mode DAG run of the same comparison: ``bench_connect.py --job-python PATH``.

``--fresh-cache``: each round starts with an empty class-data-sharing cache (``XDG_CACHE_HOME``), as the first
run after an install; between days the benchmark waits for the warm-ups those runs start in the background
(spark/warm_up.py; daily runs are a day apart), and reports each task's first run against its daily run.
``--warm-up`` (with ``--fresh-cache``): each round runs the warm-up command the install guide names (``python -m
airflow_paimon.spark.warm_up``, every job's archive) into the empty cache before its first day, and reports how
long it took: the first run after an install that follows the guide.
``--floor``: before each round, the two floor spark-submits of bench_spark_floor.py (a PySpark job with one
Python task, a driver-only job reading a snapshot), so the daily run has its floor beside it in the same run.

    python tests/benchmarks/bench_job_env.py [--repeat 3] [--days 3] [--rows-per-day 1000] [--starts 5]
        [--job-python PATH] [--modes ...] [--fresh-cache [--warm-up]] [--floor] [--out DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "dags"))
from run_example import demo_batches  # noqa: E402

from airflow_paimon.embedded import configure_env, migrate_db, quiet_output  # noqa: E402

_HOME = Path(tempfile.mkdtemp(prefix="bench-job-env-"))
configure_env(_HOME, ROOT / "dags")  # before Airflow is imported
quiet_output()

from bench_upsert import load_average, machine  # noqa: E402

MODES = ("one environment", "job environment")
TASKS = ("bootstrap_index", "assign_and_write", "commit", "compact")


def create_job_env(path: Path) -> str:
    subprocess.run([sys.executable, "-m", "airflow_paimon.job_env", "create", str(path)], check=True)
    return str(path / "bin" / "python")


def timed_process(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def process_starts(job_python: str, repeat: int, warehouse: Path) -> dict:
    """Median seconds of each extra process start a job environment brings, named."""
    from airflow_paimon.job_env import JobEnv, steps
    from airflow_paimon.job_env.step import run_step

    os.environ["AIRFLOW__PAIMON__JOB_PYTHON"] = job_python
    warehouse.mkdir(parents=True, exist_ok=True)
    named = {"interpreter start (python -c pass)": [], "job-side imports (pypaimon, pandas, pyarrow)": [],
             "one step's round trip (list_databases)": []}
    try:
        for _ in range(repeat):
            named["interpreter start (python -c pass)"].append(timed_process([job_python, "-c", "pass"]))
            named["job-side imports (pypaimon, pandas, pyarrow)"].append(timed_process(
                [job_python, "-c", "import airflow_paimon.engine.table.table, pypaimon, pandas, pyarrow"]))
            started = time.perf_counter()
            run_step(steps.list_databases, JobEnv(job_python), catalog_options={"warehouse": str(warehouse)})
            named["one step's round trip (list_databases)"].append(time.perf_counter() - started)
    finally:
        del os.environ["AIRFLOW__PAIMON__JOB_PYTHON"]
    return {name: round(statistics.median(s), 2) for name, s in named.items()}


def wait_for_warm_ups(cache: Path, limit_s: float = 900) -> float:
    """Seconds until no class-data-sharing warm-up holds a lock in ``cache`` (spark/warm_up.py)."""
    started = time.perf_counter()
    while list(cache.glob("airflow-paimon/cds/.*.warming")) and time.perf_counter() - started < limit_s:
        time.sleep(1)
    return round(time.perf_counter() - started, 1)


def daily_round(dag, mode: str, job_python: str, r: int, rows_per_day: int, n_days: int,
                fresh_cache: bool = False, warm_up: bool = False) -> list[dict]:
    """``n_days`` daily runs on a fresh warehouse; per run the wall seconds and each task's (TI start to end).
    ``fresh_cache``: an empty class-data-sharing cache first; the warm-ups a run starts end before the next.
    ``warm_up``: the install guide's warm-up command into that cache first (its seconds on the first run)."""
    import pendulum

    cache = _HOME / f"cache-{r}-{mode.split()[0]}"
    warm_up_s = None
    if fresh_cache:
        os.environ["XDG_CACHE_HOME"] = str(cache)
        if warm_up:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "airflow_paimon.spark.warm_up"], check=True, env=os.environ,
                           stdout=subprocess.DEVNULL)
            warm_up_s = round(time.perf_counter() - started, 2)

    warehouse = _HOME / f"wh-{r}-{mode.split()[0]}"
    os.environ["AIRFLOW_CONN_PAIMON_DEFAULT"] = json.dumps({"conn_type": "paimon",
                                                            "extra": {"warehouse": str(warehouse)}})
    if mode == "job environment":
        os.environ["AIRFLOW__PAIMON__JOB_PYTHON"] = job_python
    first = datetime.date(2027, 1, 1) + datetime.timedelta(days=n_days * (2 * r + MODES.index(mode)))
    days = [str(first + datetime.timedelta(days=d)) for d in range(n_days)]
    sources = _HOME / "sources" / "orders"
    sources.mkdir(parents=True, exist_ok=True)
    for day, batch in zip(days, demo_batches(days, rows_per_day)):
        batch.to_parquet(sources / f"{day}.parquet", index=False)
    runs = []
    try:
        for day in days:
            started = time.perf_counter()
            run = dag.test(logical_date=pendulum.parse(day))
            wall = time.perf_counter() - started
            tis = {ti.task_id: ti for ti in run.get_task_instances()}
            if run.state != "success":
                raise RuntimeError(f"{mode} {day}: {run.state} { {t: ti.state for t, ti in tis.items()} }")
            runs.append({"day": day, "wall_s": round(wall, 2), "load": load_average(),
                         "tasks_s": {t: round((tis[t].end_date - tis[t].start_date).total_seconds(), 2)
                                     for t in TASKS}})
            if warm_up_s is not None and len(runs) == 1:
                runs[0]["warm_up_command_s"] = warm_up_s
            if fresh_cache:
                runs[-1]["warm_up_wait_s"] = wait_for_warm_ups(cache)
    finally:
        os.environ.pop("AIRFLOW__PAIMON__JOB_PYTHON", None)
        os.environ.pop("XDG_CACHE_HOME", None)
    return runs


def summary(runs: list[dict]) -> dict:
    """Medians over the rounds: the first day (the table created) and the later days (the daily run)."""
    def med(items, key):
        return round(statistics.median(key(x) for x in items), 2)

    first, later = [x for x in runs if x["index"] == 0], [x for x in runs if x["index"] > 0]
    return {"first_run_s": med(first, lambda x: x["wall_s"]), "daily_run_s": med(later, lambda x: x["wall_s"]),
            "daily_tasks_s": {t: med(later, lambda x, t=t: x["tasks_s"][t]) for t in TASKS},
            "first_tasks_s": {t: med(first, lambda x, t=t: x["tasks_s"][t]) for t in TASKS}}


def report(result: dict, meta: dict) -> str:
    lines = [f"# A job environment's cost to the example's daily DAG ({meta['date']})", "",
             f"{meta['machine']}; load average before {meta['load_before']}, after {meta['load_after']}. "
             f"{result['repeat']} rounds of {result['days']} daily runs ({result['rows_per_day']} rows a day), "
             "the modes interleaved, each round on a fresh warehouse; medians. The daily run: every day after the "
             "first.", "",
             "| job side | first run s | daily run s | bootstrap s | assign and write s | commit s | compact s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for mode in result["median"]:
        s = result["median"][mode]
        t = s["daily_tasks_s"]
        lines.append(f"| {mode} | {s['first_run_s']} | {s['daily_run_s']} | {t['bootstrap_index']} | "
                     f"{t['assign_and_write']} | {t['commit']} | {t['compact']} |")
    if result.get("fresh_cache"):
        after = (" after the install guide's `python -m airflow_paimon.spark.warm_up` (its runs: "
                 + ", ".join(f"{x['warm_up_command_s']} s" for m in result["runs"] for x in result["runs"][m]
                             if "warm_up_command_s" in x) + ")") if result.get("warm_up") else ""
        lines += ["", f"First run after an install (empty class-data-sharing cache){after} against the daily run, "
                  "per task (medians; first ÷ daily):", "",
                  "| job side | task | first run s | daily run s | first ÷ daily |", "|---|---|---:|---:|---:|"]
        for mode in result["median"]:
            s = result["median"][mode]
            for t in ("assign_and_write", "commit"):
                first, daily = s["first_tasks_s"][t], s["daily_tasks_s"][t]
                lines.append(f"| {mode} | {t} | {first} | {daily} | {round(first / daily, 2) if daily else ''} |")
    if result.get("floor"):
        lines += ["", "The floor before each round (bench_spark_floor.py: a one-Python-task PySpark spark-submit "
                  "plus a driver-only one reading a snapshot, after the run writing their archives):", ""]
        for r, f in enumerate(result["floor"]):
            lines.append(f"- round {r}: {f['sum']} s (load {f['load']})")
        floor = statistics.median(f["sum"] for f in result["floor"])
        for mode in result["median"]:
            daily = result["median"][mode]["daily_run_s"]
            lines.append(f"- {mode}: daily run {daily} s = {round(daily / floor, 2)} × the floor's median "
                         f"{round(floor, 2)} s")
    if not result.get("process_starts_s"):
        return "\n".join(lines) + "\n"
    lines += ["", "Each extra process start of the job environment, on its own (median):", ""]
    lines += [f"- {name}: {s} s" for name, s in result["process_starts_s"].items()]
    lines += ["", "All daily runs (wall seconds, load average at the end):", ""]
    for mode in result["runs"]:
        lines.append(f"- {mode}: " + ", ".join(f"{x['wall_s']} ({x['load']})" for x in result["runs"][mode]))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows-per-day", type=int, default=1000)
    parser.add_argument("--starts", type=int, default=5, help="repeats of each process start measured")
    parser.add_argument("--days", type=int, default=3, help="daily runs per round (at least 2)")
    parser.add_argument("--job-python", help="an existing job environment's interpreter (default: create one)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--fresh-cache", action="store_true", help="each round from an empty archive cache")
    parser.add_argument("--warm-up", action="store_true", help="with --fresh-cache: the warm-up command first")
    parser.add_argument("--floor", action="store_true", help="the floor spark-submits before each round")
    parser.add_argument("--out", type=Path, default=HERE / "results" / datetime.date.today().isoformat())
    args = parser.parse_args()
    with_job_env = "job environment" in args.modes
    job_python = args.job_python or (create_job_env(_HOME / "job-env") if with_job_env else sys.executable)
    migrate_db()
    from paimon_upsert_daily import dag

    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "load_before": load_average()}
    result = {"repeat": args.repeat, "rows_per_day": args.rows_per_day, "days": args.days, "job_python": job_python,
              "process_starts_s": process_starts(job_python, args.starts, _HOME / "wh-steps") if with_job_env else {},
              "runs": {m: [] for m in args.modes}, "fresh_cache": args.fresh_cache,
              "warm_up": args.fresh_cache and args.warm_up, "floor": []}
    for r in range(args.repeat):
        if args.floor:
            from bench_spark_floor import latency

            work = _HOME / f"floor-{r}"
            work.mkdir()
            result["floor"].append({**latency(work, 1), "load": load_average()})
            print(f"round {r} floor: {result['floor'][-1]['sum']} s", file=sys.stderr)
        for mode in args.modes:  # interleaved: load from other processes hits both alike
            runs = daily_round(dag, mode, job_python, r, args.rows_per_day, args.days, args.fresh_cache,
                               args.warm_up)
            for i, x in enumerate(runs):
                x["index"] = i
            result["runs"][mode].extend(runs)
            print(f"round {r} {mode}: {[x['wall_s'] for x in runs]}", file=sys.stderr)
    result["median"] = {m: summary(result["runs"][m]) for m in args.modes}
    meta["load_after"] = load_average()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "job_env.json").write_text(json.dumps({"meta": meta, **result}, indent=2))
    text = report(result, meta)
    (args.out / "job_env.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
