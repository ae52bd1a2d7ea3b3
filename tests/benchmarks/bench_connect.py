"""Benchmark: a DAG run's write tasks end to end — warm bootstrap → assign-and-write → commit through dag.test(),
Airflow's task overhead included — in Spark Connect mode (jobs in the task process, Spark work on a running
Connect server) and in spark-submit mode (a driver per task), against pypaimon-rust's upsert of the same
batch into the same table (bench_upsert's peer: its own process, timed from reading the batch to the commit).

Per mode and run: a fresh copy of the M-row table (bench_upsert's data and loader), one DAG run that upserts
B/100 of its rows unchanged (it builds the index, as a previous day's run would have; not measured), then the
measured DAG run with the batch (B/2 updates, 10 % of them moving partition, B/2 new keys); the table is then
checked (every key once, the batch's values in place). The Connect server (local[2], as the DAGs' local
connection) is started once; its start is not measured.

    python tests/benchmarks/bench_connect.py [--rows 5000000] [--batch 100000] [--repeat 3]
        [--modes connect submit pypaimon-rust connect-job-env submit-job-env] [--job-python PATH] [--out DIR]

The -job-env modes run the same DAG with ``[paimon] job_python`` set to ``--job-python`` (a job environment:
the Paimon steps and Connect clients are processes there; bench_job_env.py creates one).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from airflow_paimon.embedded import configure_env, migrate_db  # noqa: E402

_HOME = Path(tempfile.mkdtemp(prefix="bench-connect-"))
DAGS = _HOME / "dags"
DAGS.mkdir(parents=True)
configure_env(_HOME, DAGS)  # before Airflow is imported

from bench_upsert import (CROSS, TABLE, load_average, load_paimon, machine, make_data, read_paimon,  # noqa: E402
                          run_peer, verify)
import processes  # noqa: E402 - tests/, on the path bench_upsert set

MODES = ("connect", "submit", "pypaimon-rust", "connect-job-env", "submit-job-env")
JOB_ENV_SUFFIX = "-job-env"  # the same mode with the job side in a job environment (--job-python)
JOB_PYTHON = "AIRFLOW__PAIMON__JOB_PYTHON"
TASKS = ("bootstrap_index", "assign_and_write", "commit")
DAG_ID = "bench_write"
DAG_FILE = f'''
import pendulum
from airflow.sdk import DAG
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

with DAG("{DAG_ID}", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), params={{"source": ""}},
         default_args={{"retries": 0}}) as dag:
    (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{TABLE}", shards=4)
     >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{TABLE}", source="{{{{ params.source }}}}")
     >> PaimonCommitOperator(task_id="commit", table="{TABLE}"))
'''


def start_connect_server(port: int, log: Path, conf: dict[str, str] | None = None) -> subprocess.Popen:
    from pyspark.sql import SparkSession

    from airflow_paimon.spark.connect_server import server_command

    command, env = server_command("127.0.0.1", port, "local[2]", python=sys.executable, conf=conf)
    with open(log, "wb") as out:
        server = processes.start(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the Connect server exited:\n{log.read_text()[-3000:]}")
        try:
            SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create().stop()
            return server
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def use(mode: str, warehouse: Path, port: int | None, job_python: str | None = None) -> None:
    os.environ.pop(JOB_PYTHON, None)
    if mode.endswith(JOB_ENV_SUFFIX):
        os.environ[JOB_PYTHON] = job_python
        mode = mode[:-len(JOB_ENV_SUFFIX)]
    os.environ["AIRFLOW_CONN_PAIMON_DEFAULT"] = json.dumps({"conn_type": "paimon",
                                                            "extra": {"warehouse": str(warehouse)}})
    spark = ({"conn_type": "spark_connect", "host": "127.0.0.1", "port": port} if mode == "connect"
             else {"conn_type": "spark", "host": "local[2]"})
    os.environ["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps(spark)


def dag_run(dag, source: str) -> dict:
    """Wall seconds of one dag.test() run and each task's duration (its TI's start to end)."""
    start = time.perf_counter()
    run = dag.test(run_conf={"source": source})
    wall = time.perf_counter() - start
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    if run.state != "success":
        raise RuntimeError(f"DAG run {run.state}: { {t: ti.state for t, ti in tis.items()} }")
    tasks = {t: round((tis[t].end_date - tis[t].start_date).total_seconds(), 3) for t in TASKS}
    return {"wall_s": round(wall, 3), "tasks_s": tasks, "tasks_sum_s": round(sum(tasks.values()), 3),
            "results": {t: tis[t].xcom_pull(task_ids=t) for t in TASKS}}


def ours(mode: str, dag, loaded: Path, work: Path, warm_up: str, batch_path: str, batch, expect: int,
         port: int | None, r: int, job_python: str | None = None) -> dict:
    warehouse = work / f"wh-{mode}-{r}"
    shutil.copytree(loaded, warehouse)
    use(mode, warehouse, port, job_python)
    previous = dag_run(dag, warm_up)  # the previous day's run: builds the index, the measured run reuses it
    measured = dag_run(dag, batch_path)
    if not measured["results"]["bootstrap_index"]["reused"]:
        raise AssertionError(f"{mode}: the measured run's bootstrap did not reuse the index")
    verify(read_paimon(warehouse), batch, expect, f"ours, {mode}")
    shutil.rmtree(warehouse, ignore_errors=True)
    return {**measured, "previous_run_wall_s": previous["wall_s"]}


def median(runs: list[dict], key: str = "wall_s") -> dict:
    ordered = sorted(runs, key=lambda r: r[key])
    return ordered[(len(ordered) - 1) // 2]


def run(m: int, b: int, repeat: int, modes: tuple, out: Path, log=print, job_python: str | None = None) -> dict:
    work = Path(tempfile.mkdtemp(prefix="work-", dir=_HOME))
    base, batch, facts = make_data(m, b)
    batch_path = str(work / "batch.parquet")
    pq.write_table(batch, batch_path)
    warm_up = str(work / "previous.parquet")
    pq.write_table(base.slice(0, max(1, b // 100)), warm_up)  # rows the table has: its content stays M rows
    loaded = work / "loaded"
    load_paimon(loaded, CROSS, base)
    del base
    expect = m + facts["new"]
    (DAGS / f"{DAG_ID}.py").write_text(DAG_FILE)
    migrate_db()
    sys.path.insert(0, str(DAGS))
    from bench_write import dag

    server, port = None, None
    result = {"rows": m, "batch": b, "repeat": repeat, **facts, "runs": {}, "median": {}}
    try:
        if any(mode.startswith("connect") for mode in modes):
            from airflow_paimon.spark.connect_server import DEFAULT_PORT
            port = DEFAULT_PORT + 17
            started = time.perf_counter()
            server = start_connect_server(port, _HOME / "connect_server.log")
            result["connect_server_start_s"] = round(time.perf_counter() - started, 1)
        for r in range(repeat):  # modes interleaved: load from other processes hits all alike
            for mode in modes:
                if mode == "pypaimon-rust":
                    target = work / f"rust-{r}"
                    shutil.copytree(loaded, target)
                    runs = run_peer("pypaimon-rust", {"warehouse": str(target), "batch": batch_path}, work)
                    verify(read_paimon(target), batch, expect, "pypaimon-rust")
                    shutil.rmtree(target, ignore_errors=True)
                    measured = {"wall_s": runs["s"], "process_wall_s": runs["wall_s"], "rss_mib": runs["rss_mib"]}
                else:
                    measured = ours(mode, dag, loaded, work, warm_up, batch_path, batch, expect, port, r,
                                    job_python)
                measured["load"] = load_average()
                result["runs"].setdefault(mode, []).append(measured)
                log(f"run {r} {mode}: {json.dumps({k: v for k, v in measured.items() if k != 'results'})}")
    finally:
        if server is not None:
            from airflow_paimon.spark.submit import stop_process_group
            stop_process_group(server, grace_seconds=60)
        shutil.rmtree(work, ignore_errors=True)
    for mode, runs in result["runs"].items():
        result["median"][mode] = median(runs)
    rust = result["median"].get("pypaimon-rust", {}).get("wall_s")
    for mode in MODES:
        if mode in result["median"] and rust and mode != "pypaimon-rust":
            result["median"][mode]["pypaimon_rust_over_ours"] = round(rust / result["median"][mode]["wall_s"], 2)
    return result


def report(result: dict, meta: dict) -> str:
    med = result["median"]
    lines = [f"# Write tasks end to end: Spark Connect vs spark-submit vs pypaimon-rust ({meta['date']})", "",
             f"{meta['machine']}; load average before {meta['load_before']}, after {meta['load_after']}. "
             f"M = {result['rows']:,} rows, B = {result['batch']:,} ({result['updates']:,} updates, "
             f"{result['moved']:,} of them moving partition, {result['new']:,} new keys); median of "
             f"{result['repeat']} runs, each on a fresh copy of the table. Ours: one dag.test() run of warm "
             "bootstrap → assign-and-write → commit (wall, Airflow included); pypaimon-rust: its upsert in its "
             "own process (read batch → commit).", "",
             "| system | seconds | pypaimon-rust ÷ this | bootstrap s | assign and write s | commit s | "
             "Airflow and the rest s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    labels = {"connect": "ours, Spark Connect mode", "submit": "ours, spark-submit mode",
              "pypaimon-rust": "pypaimon-rust native writer",
              "connect-job-env": "ours, Spark Connect mode, job environment",
              "submit-job-env": "ours, spark-submit mode, job environment"}
    for mode, m in med.items():
        tasks = m.get("tasks_s", {})
        rest = round(m["wall_s"] - m["tasks_sum_s"], 2) if tasks else ""
        ratio = m.get("pypaimon_rust_over_ours", 1.0 if mode == "pypaimon-rust" else "")
        lines.append(f"| {labels[mode]} | {m['wall_s']} | {ratio} | {tasks.get('bootstrap_index', '')} | "
                     f"{tasks.get('assign_and_write', '')} | {tasks.get('commit', '')} | {rest} |")
    lines += ["", "All runs (seconds, load average at the end of the run):", ""]
    for mode, runs in result["runs"].items():
        lines.append(f"- {labels[mode]}: " + ", ".join(f"{r['wall_s']} ({r['load']})" for r in runs))
    if "connect_server_start_s" in result:
        lines.append(f"- Connect server start (once, not measured above): {result['connect_server_start_s']} s")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000, help="table size M")
    parser.add_argument("--batch", type=int, default=100_000, help="batch size B")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=list(MODES[:3]), choices=MODES)
    parser.add_argument("--job-python", help="a job environment's interpreter (python -m airflow_paimon.job_env "
                                             "create PATH) for the modes ending in -job-env")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "benchmarks" / "results" /
                        datetime.date.today().isoformat())
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "load_before": load_average()}
    if any(mode.endswith(JOB_ENV_SUFFIX) for mode in args.modes) and not args.job_python:
        parser.error("the -job-env modes need --job-python")
    result = run(args.rows, args.batch, args.repeat, tuple(args.modes), args.out, job_python=args.job_python)
    meta["load_after"] = load_average()
    for runs in result["runs"].values():
        for r in runs:
            r.pop("results", None)
    for m in result["median"].values():
        m.pop("results", None)
    (args.out / "connect_write.json").write_text(json.dumps({"meta": meta, **result}, indent=2))
    text = report(result, meta)
    (args.out / "connect_write.md").write_text(text)
    print(text)
    print(f"written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
