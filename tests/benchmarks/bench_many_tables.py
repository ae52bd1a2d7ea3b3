"""Benchmark: one DAG writing many tables — N ``paimon_upsert`` groups (tables db.t00, db.t01, …, each its own
M-row table, each given the same B-row batch) — in Spark Connect mode and in spark-submit mode, against the same
DAG shape with one table; and (mode ``airflow``) the same two DAG shapes with no-op tasks: Airflow's own floor;
and (mode ``passthrough``) the no-op DAGs with each assign_and_write a Connect job of our plan's shape whose Python
functions only pass the rows on: the floor of any job of that shape.

The tasks run in parallel as in a deployment: ``dag.test(use_executor=True)`` queues every ready task to a
LocalExecutor (``--parallelism`` worker processes, ``[core] parallelism``); its task processes reach the
Execution API of an ``airflow api-server`` this benchmark starts on 127.0.0.1; Airflow's metadata DB is
SQLite (with a 60 s busy timeout: the api-server and the dag.test loop write to it concurrently).

Per mode: the one-table DAG, then the N-table DAG, each on fresh copies of the loaded tables (bench_upsert's
data and loader): a previous run that upserts B/100 of the table's rows unchanged (it builds each table's index,
as the previous day's run would have; not measured), then the measured run with the batch. With ``--cold``
there is no previous run (the measured run builds the indexes, as a new table's first run) and the one-table
DAG runs once first, not measured (class loading and JIT of a new Connect server or spark-submit job). Measured:
the run's span (first task start to last task end) and dag.test()'s wall time, the peak of
the machine's used memory over its level before the run (psutil, every 0.2 s; other processes on the machine
count too), the peak RSS of this process tree (the executor's task processes, spark-submit JVMs and Python
workers, the api-server and Connect server), the machine's busy CPU seconds (and the servers' part of them), the
most tasks running at once, failed tasks (with a flag when their log shows a memory error). Every table is then
read back and checked (bench_upsert.verify).

    python tests/benchmarks/bench_many_tables.py [--tables 20] [--rows 1000000] [--batch 100000]
        [--parallelism 8] [--modes connect submit airflow passthrough] [--server-conf spark.driver.memory=4g] [--cold]
        [--preload MODULE ...] [--passthrough-shuffles 2] [--out DIR]
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# bench_connect points Airflow at its own throw-away home (and DAGS folder) on import, before Airflow is imported.
from bench_connect import _HOME, DAGS, start_connect_server, use  # noqa: E402
from bench_upsert import (CROSS, PeakRSS, load_average, load_paimon, machine, make_data, read_paimon,  # noqa: E402
                          verify)
import processes  # noqa: E402 - tests/, on the path bench_upsert set

# airflow: the same DAG shape with no-op tasks, Airflow's own floor; passthrough: the same again, each
# assign_and_write a Connect job of our plan's shape with pass-through Python functions, the floor of such a job
MODES = ("connect", "submit", "airflow", "passthrough")
SHARDS = 4
DAG_FILE = '''
import pendulum
from airflow.sdk import DAG
from airflow_paimon.task_group import paimon_upsert

with DAG("{dag_id}", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), params={{"source": ""}},
         default_args={{"retries": 0}}) as dag:
    for table in {tables!r}:
        paimon_upsert(table=table, source="{{{{ params.source }}}}", bootstrap_kwargs={{"shards": {shards}}})
'''
# The floor: a group per table of four chained tasks that only return a small dict (an XCom, as ours), run the
# same way; what Airflow itself takes for the shape, whatever the tasks do
FLOOR_DAG_FILE = '''
import pendulum
from airflow.sdk import DAG, TaskGroup, task


@task
def step(previous=None):
    return {{"done": True}}


with DAG("{dag_id}", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), params={{"source": ""}},
         default_args={{"retries": 0}}) as dag:
    for table in {tables!r}:
        with TaskGroup(table.replace(".", "_")):
            previous = None
            for name in ("bootstrap_index", "assign_and_write", "commit", "compact"):
                previous = step.override(task_id=name)(previous)
'''
# The floor of a job of our shape in Connect mode: the no-op DAG, its assign_and_write tasks each a Connect session
# running the cross-partition pipeline's plan (spark/pipelines/cross_partition.py: the batch read, a shuffle by
# key, a Python function, a shuffle by place, a Python function, collect) with functions that only pass the rows
# on and count them; with ``shuffles`` 1 the plan of a table this provider filled (no shuffle by place). Same
# session settings as our jobs (spark/job_frame.py spark_session): one shuffle partition per core, no adaptive
# execution, 8 MiB Arrow batches; as many tasks by key as cross_partition.task_count() gives where the cores divide
# the shards. Written out, not imported: importing our job and pipeline modules costs a task process 0.3-1.3 s that
# a pass-through job does not pay. The count is checked, so a lost row fails the task.
PASSTHROUGH_DAG_FILE = '''
import pendulum
from airflow.sdk import DAG, TaskGroup, task


@task
def step(previous=None):
    return {{"done": True}}


@task
def pass_through(source, previous=None):
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession
    from airflow_paimon.spark.connect import connect_session, connection_url, default_parallelism, stop_session

    builder = SparkSession.builder.appName("pass-through").config("spark.sql.execution.arrow.pyspark.enabled", "true")
    spark = connect_session(builder, connection_url("spark_default"), None)
    try:
        cores = default_parallelism(spark)
        for key, value in {{"spark.sql.shuffle.partitions": str(cores), "spark.sql.adaptive.enabled": "false",
                           "spark.sql.execution.arrow.maxBytesPerBatch": str(8 * 2**20)}}.items():
            spark.conf.set(key, value)

        def rows_on(batches):  # nested: pickled by value, the server's workers cannot import this DAG file
            yield from batches

        def counted(batches):
            import pyarrow as pa
            yield pa.RecordBatch.from_pydict({{"rows": [sum(b.num_rows for b in batches)]}})

        batch = spark.read.parquet(source)
        by_key = batch.repartition(min(cores, {shards}), "id")
        if {shuffles} == 2:
            by_key = by_key.mapInArrow(rows_on, batch.schema).repartition(cores, "dt")
        rows = sum(r["rows"] for r in by_key.mapInArrow(counted, "rows long").collect())
    finally:
        stop_session(spark)
    expected = pq.read_metadata(source).num_rows
    if rows != expected:
        raise RuntimeError(f"{{rows}} rows passed through, {{expected}} in {{source}}")
    return {{"rows": rows}}


with DAG("{dag_id}", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), params={{"source": ""}},
         default_args={{"retries": 0}}) as dag:
    for table in {tables!r}:
        with TaskGroup(table.replace(".", "_")):
            previous = step.override(task_id="bootstrap_index")()
            previous = pass_through.override(task_id="assign_and_write")("{{{{ params.source }}}}", previous)
            previous = step.override(task_id="commit")(previous)
            step.override(task_id="compact")(previous)
'''
FLOOR_FILES = {"airflow": FLOOR_DAG_FILE, "passthrough": PASSTHROUGH_DAG_FILE}  # the modes that write no table
MEMORY_ERROR = re.compile(r"OutOfMemoryError|MemoryError|Cannot allocate memory|Killed|SIGKILL|exit code -9|"
                          r"return code 137")


def table_names(n: int) -> list[str]:
    return [f"db.t{i:02d}" for i in range(n)]


def dag_id(n: int, floor: str | None = None) -> str:
    return f"bench_{floor or 'many'}_{n}"


# ---------------------------------------------------------------------------------------------- Airflow set-up
def configure_executor(parallelism: int, api_port: int) -> None:
    """LocalExecutor settings; before Airflow is imported (BaseExecutor reads [core] parallelism at import)."""
    sqlite = os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    os.environ.update({
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(parallelism),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
        # the executor signs each task's token, the api-server checks it: one secret for both
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        # the api-server and the dag.test() loop write concurrently: wait for SQLite's lock, don't fail
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": sqlite if "?" in sqlite else sqlite + "?timeout=60",
        # the task logs (also in $AIRFLOW_HOME/logs) reach stdout through the executor: warnings only
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "SPARK_LOCAL_IP": "127.0.0.1",
    })


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_api_server(port: int, log: Path, timeout: float = 300) -> subprocess.Popen:
    """``airflow api-server`` on 127.0.0.1 (the Execution API the executor's tasks call), once healthy."""
    with open(log, "wb") as out:
        server = processes.start([str(Path(sys.executable).parent / "airflow"), "api-server", "--host", "127.0.0.1",
                                  "--port", str(port), "--workers", "1"], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"airflow api-server exited {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/monitor/health", timeout=5):
                return server
        except OSError:
            time.sleep(0.5)
    stop(server)
    raise RuntimeError(f"airflow api-server not healthy after {timeout} s:\n{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen | None) -> None:
    processes.stop(process, 60)


def write_dags(sizes: set[int], floor: str | None = None, shuffles: int = 2) -> dict:
    """A DAG file per table count in the DAGS folder (the executor's tasks parse it from there); the DAGs.
    ``floor``: a mode of FLOOR_FILES, whose DAGs write no table."""
    sys.path.insert(0, str(DAGS))
    dags = {}
    for n in sorted(sizes):
        source = FLOOR_FILES[floor] if floor else DAG_FILE
        (DAGS / f"{dag_id(n, floor)}.py").write_text(source.format(dag_id=dag_id(n, floor), tables=table_names(n),
                                                                   shards=SHARDS, shuffles=shuffles))
        dags[n] = __import__(dag_id(n, floor)).dag
    return dags


# ---------------------------------------------------------------------------------------------- measuring
class MachineMemory(PeakRSS):
    """Peak of the machine's used memory (psutil.virtual_memory().used) while running, sampled as PeakRSS
    samples a process tree, and its level before."""

    def __init__(self, interval: float = 0.2):
        super().__init__(os.getpid(), interval)
        self.baseline = self._sample()

    def _sample(self) -> int:
        import psutil
        return psutil.virtual_memory().used

    @property
    def over_baseline_gib(self) -> float:
        return round((self.peak - self.baseline) / 2**30, 2)


def max_concurrent(intervals: list[tuple]) -> int:
    """The most intervals (start, end) open at one instant."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def memory_flag(ti) -> bool:
    """Whether a failed task's log shows a memory error (JVM or Python OOM, a process killed)."""
    logs = Path(os.environ["AIRFLOW_HOME"]) / "logs" / f"dag_id={ti.dag_id}" / f"run_id={ti.run_id}" / \
        f"task_id={ti.task_id}"
    return any(MEMORY_ERROR.search(f.read_text(errors="replace")) for f in logs.glob("*.log"))


def summarise(run, wall: float) -> dict:
    """Span, per-task and per-table figures of a finished DAG run, and its failed tasks."""
    tis = run.get_task_instances()
    done = [ti for ti in tis if ti.start_date and ti.end_date]
    failed = sorted(ti.task_id for ti in tis if ti.state != "success")
    spans = {}
    for ti in done:  # a table's time: its group's first task start to last task end
        group = ti.task_id.split(".")[0]
        first, last = spans.get(group, (ti.start_date, ti.end_date))
        spans[group] = (min(first, ti.start_date), max(last, ti.end_date))
    per_table = sorted((e - s).total_seconds() for s, e in spans.values())
    by_task = {}
    for ti in done:
        by_task.setdefault(ti.task_id.split(".")[-1], []).append((ti.end_date - ti.start_date).total_seconds())
    return {
        "state": str(run.state), "wall_s": round(wall, 2),
        "span_s": round((max(ti.end_date for ti in done) - min(ti.start_date for ti in done)).total_seconds(), 2)
        if done else None,
        "max_concurrent_tasks": max_concurrent([(ti.start_date, ti.end_date) for ti in done]),
        "table_s": {"min": round(per_table[0], 2), "median": round(statistics.median(per_table), 2),
                    "max": round(per_table[-1], 2)} if per_table else {},
        "task_median_s": {t: round(statistics.median(v), 2) for t, v in by_task.items()},
        "tasks_sum_s": round(sum(sum(v) for v in by_task.values()), 1),
        "failed": failed, "failed_for_memory": sorted(ti.task_id for ti in tis
                                                      if ti.state == "failed" and memory_flag(ti)),
    }


SERVERS: dict[str, int] = {}  # role -> pid of the servers the runs use (their CPU is counted apart)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process so far: its own, its reaped children's and its live descendants'."""
    import psutil
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


class ProcessCpu:
    """CPU seconds of processes outside the servers' trees, sampled every ``interval`` s while running (a
    process's last ``interval`` before it exits is not counted):

    - the LocalExecutor's worker processes (this process's children other than the servers), split into the
      workers' own (each runs the Airflow supervisor of its tasks) and their task processes' (reaped ones through
      the worker's children times, running ones read directly);
    - the Connect server's Python side: its zygote (spark/connect_daemon.py) is re-parented to init, and it forks
      the sessions' daemons, whose forks are Spark's Python workers, so none of them is in the server's tree."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.workers: dict[int, tuple[float, float]] = {}  # pid -> (supervisor s, task processes s)
        self.python_side: dict[int, float] = {}  # pid -> own s of the zygote and each process it forked
        self._zygote: dict[int, bool] = {}  # pid -> whether it is a zygote (or a daemon it forked): read once
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _is_zygote(self, p) -> bool:
        import psutil
        if p.pid not in self._zygote:
            try:
                self._zygote[p.pid] = "airflow_paimon.spark.connect_daemon --zygote" in " ".join(p.cmdline())
            except psutil.Error:
                return False
        return self._zygote[p.pid]

    def _sample(self) -> None:
        """One pass over /proc (each process's parent and CPU times), then the trees from it: a psutil call per
        tree would scan /proc once each."""
        import psutil
        procs = {p.pid: p for p in psutil.process_iter(["ppid", "cpu_times"])}
        children: dict[int, list[int]] = {}
        for pid, p in procs.items():
            children.setdefault(p.info["ppid"], []).append(pid)

        def descendants(pid: int) -> list[int]:
            found, stack = [], list(children.get(pid, ()))
            while stack:
                found.append(stack.pop())
                stack.extend(children.get(found[-1], ()))
            return found

        def seconds(pid: int, reaped: bool = True) -> float:
            t = procs[pid].info["cpu_times"]
            if t is None:
                return 0.0
            return t.user + t.system + (t.children_user + t.children_system if reaped else 0.0)

        servers = set(SERVERS.values())
        for worker in children.get(os.getpid(), ()):
            if worker not in servers:
                self.workers[worker] = (seconds(worker, reaped=False), seconds(worker) - seconds(
                    worker, reaped=False) + sum(seconds(d) for d in descendants(worker)))
        for zygote in [pid for pid, p in procs.items() if self._is_zygote(p)]:  # with the daemons it forked
            for pid in (zygote, *descendants(zygote)):  # own seconds only: a daemon's children times hold its
                self.python_side[pid] = seconds(pid, reaped=False)  # reaped workers, seen here while they ran

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self.own_seconds = time.thread_time()  # what sampling cost this process (counted in dag.test's)

    def __enter__(self):
        self._sample()
        self.python_start = dict(self.python_side)  # the zygote and daemons live across runs: counted from here
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def split(self) -> dict[str, float]:
        return {"sampling them (in dag.test's)": round(self.own_seconds, 1),
                "supervisors": round(sum(s for s, _ in self.workers.values()), 1),
                "task processes": round(sum(t for _, t in self.workers.values()), 1),
                "connect-server python side": round(sum(seconds - self.python_start.get(pid, 0.0)
                                                        for pid, seconds in self.python_side.items()), 1)}


def own_cpu_s() -> float:
    """CPU seconds of this process alone (dag.test's scheduling loop and the executor), not its children's."""
    import psutil
    t = psutil.Process().cpu_times()
    return t.user + t.system


def cpu_now() -> dict[str, float]:
    """CPU seconds so far: the machine's busy time, this process's own, each server's process tree."""
    return {"machine": machine_busy_s(), "dag.test": own_cpu_s(),
            **{role: tree_cpu_s(pid) for role, pid in SERVERS.items()}}


def machine_busy_s() -> float:
    import psutil
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def dag_run(dag, source: str) -> dict:
    """One dag.test() through the executor, measured: figures of summarise() plus memory and CPU (the machine's
    busy CPU seconds over the run; of them, each server's process tree's)."""
    # dag.test() warns "No tasks to run" every second while its tasks run elsewhere: not news here
    logging.getLogger("airflow.sdk.definitions.dag").setLevel(logging.ERROR)
    # RSS only: reading 40-odd processes' PSS (smaps) every sample cost this process ~33 of a 20-table run's 309 CPU s
    machine_memory, tree = MachineMemory(), PeakRSS(os.getpid(), interval=0.5, pss_interval=None)
    cpu_before = cpu_now()
    with machine_memory, tree, ProcessCpu() as processes_cpu:
        start = time.perf_counter()
        run = dag.test(run_conf={"source": source}, use_executor=True)
        wall = time.perf_counter() - start
    cpu = {role: round(seconds - cpu_before[role], 1) for role, seconds in cpu_now().items()}
    cpu["rest"] = round(cpu["machine"] - sum(v for r, v in cpu.items() if r != "machine"), 1)
    cpu["of the rest"] = processes_cpu.split()
    return {**summarise(run, wall), "machine_used_over_baseline_gib": machine_memory.over_baseline_gib,
            "machine_used_baseline_gib": round(machine_memory.baseline / 2**30, 2), "tree_peak_rss_gib":
            round(tree.peak / 2**30, 2), "load": load_average(), "cpu_s": cpu}


# ---------------------------------------------------------------------------------------------- runs
def copy_tables(loaded: Path, target: Path, n: int) -> Path:
    """A fresh warehouse with the first ``n`` loaded tables."""
    keep = {t.split(".")[1] for t in table_names(n)}
    shutil.copytree(loaded, target, ignore=lambda d, names: [x for x in names
                                                              if Path(d).name == "db.db" and x not in keep])
    return target


def warm_up(mode: str, dag, data: dict, port: int | None) -> None:
    """The one-table DAG once on a fresh table, not measured: the first run on a new Connect server (or of a
    spark-submit job without its class-data archive yet) pays class loading and JIT, the measured runs don't."""
    warehouse = copy_tables(data["loaded"], data["work"] / f"wh-{mode}-warm-up", 1)
    use(mode, warehouse, port)
    failed = dag_run(dag, data["previous"])["failed"]
    shutil.rmtree(warehouse, ignore_errors=True)
    if failed:
        raise RuntimeError(f"{mode}: the warm-up run failed: {failed}")


def measured_run(mode: str, n: int, dag, data: dict, port: int | None, cold: bool, log=print) -> dict:
    """The ``n``-table DAG on fresh tables: the previous run (unless ``cold``), the measured run, every table
    checked."""
    warehouse = copy_tables(data["loaded"], data["work"] / f"wh-{mode}-{n}", n)
    use(mode, warehouse, port)
    previous = None if cold else dag_run(dag, data["previous"])
    if previous and previous["failed"]:
        raise RuntimeError(f"{mode}, {n} tables: the previous run failed: {previous['failed']}")
    result = dag_run(dag, data["batch_path"])
    if not result["failed"]:
        for table in table_names(n):
            verify(read_paimon(warehouse, table), data["batch"], data["expect"], f"{mode}, {n} tables, {table}")
    result["previous_run_span_s"] = previous and previous["span_s"]
    shutil.rmtree(warehouse, ignore_errors=True)
    log(f"{mode}, {n} table(s): {json.dumps(result)}")
    return result


def prepare(m: int, b: int, n: int, work: Path) -> dict:
    """The N loaded tables (same M rows each; none for ``n`` 0), the batch and the previous run's batch (rows the
    tables have)."""
    base, batch, facts = make_data(m, b)
    data = {"work": work, "batch": batch, "expect": m + facts["new"], "facts": facts, "loaded": work / "loaded",
            "batch_path": str(work / "batch.parquet"), "previous": str(work / "previous.parquet")}
    pq.write_table(batch, data["batch_path"])
    pq.write_table(base.slice(0, max(1, b // 100)), data["previous"])
    for table in table_names(n):
        load_paimon(data["loaded"], CROSS, base, table)
    return data


def run(n: int, m: int, b: int, modes: tuple, cold: bool, server_conf: dict, api_port: int, log=print,
        shuffles: int = 2) -> dict:
    work = Path(tempfile.mkdtemp(prefix="work-", dir=_HOME))
    data = prepare(m, b, n if {"connect", "submit"} & set(modes) else 0, work)  # the floors write no table
    from airflow_paimon.embedded import migrate_db
    migrate_db()
    dags = write_dags({1, n})
    floor_dags = {mode: write_dags({1, n}, floor=mode, shuffles=shuffles) for mode in FLOOR_FILES if mode in modes}
    api = connect = None
    result = {"tables": n, "rows": m, "batch": b, **data["facts"], "modes": {}}
    try:
        started = time.perf_counter()
        api = start_api_server(api_port, _HOME / "api-server.log")
        SERVERS["api-server"] = api.pid
        result["api_server_start_s"] = round(time.perf_counter() - started, 1)
        port = None
        if {"connect", "passthrough"} & set(modes):
            port, started = free_port(), time.perf_counter()
            connect = start_connect_server(port, _HOME / "connect_server.log", server_conf or None)
            SERVERS["connect-server"] = connect.pid
            result["connect_server_start_s"] = round(time.perf_counter() - started, 1)
        for mode in modes:
            if mode in floor_dags:  # no tables: the floor DAGs, once to warm up, then measured
                use("connect", data["work"], port)
                source = data["batch_path"] if mode == "passthrough" else ""
                if dag_run(floor_dags[mode][1], source)["failed"]:
                    raise RuntimeError(f"{mode}: the warm-up run failed")
                one, many = (dag_run(floor_dags[mode][k], source) for k in (1, n))
                log(f"{mode} floor, 1 / {n} table(s): {json.dumps(one)} / {json.dumps(many)}")
                result["modes"][mode] = {"one": one, "many": many, "ratio": ratio_of(one, many)}
                continue
            if cold:  # else the one-table DAG's previous run warms up
                warm_up(mode, dags[1], data, port)
            one = measured_run(mode, 1, dags[1], data, port, cold, log)
            many = measured_run(mode, n, dags[n], data, port, cold, log)
            result["modes"][mode] = {"one": one, "many": many, "ratio": ratio_of(one, many)}
    finally:
        stop(connect)
        stop(api)
        shutil.rmtree(work, ignore_errors=True)
    return result


def ratio_of(one: dict, many: dict) -> float | None:
    return round(many["span_s"] / one["span_s"], 2) if one["span_s"] and many["span_s"] else None


# ---------------------------------------------------------------------------------------------- report
def report(result: dict, meta: dict) -> str:
    n = result["tables"]
    lines = [f"# One DAG writing {n} tables ({meta['date']})", "",
             f"{meta['machine']}; load average before {meta['load_before']}, after {meta['load_after']}. "
             f"{n} `paimon_upsert` groups, each table M = {result['rows']:,} rows, B = {result['batch']:,} "
             f"({result['updates']:,} updates, {result['moved']:,} moving partition, {result['new']:,} new keys); "
             f"LocalExecutor through dag.test(use_executor=True), parallelism {meta['parallelism']} "
             f"(most tasks at once below); "
             f"{'cold: no previous run' if meta['cold'] else 'a previous run built each index'}. "
             f"Command: `{meta['command']}`.", "",
             f"| mode | one table s | {n} tables s | ratio | dag.test wall s (1 / {n}) | most tasks at once | "
             "machine used over baseline GiB (1 / N) | process tree peak GiB (1 / N) | per table s (min / median / "
             "max) | failed (for memory) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for mode, r in result["modes"].items():
        one, many = r["one"], r["many"]
        t = many["table_s"]
        lines.append(f"| {mode} | {one['span_s']} | {many['span_s']} | {r['ratio']} | {one['wall_s']} / "
                     f"{many['wall_s']} | {many['max_concurrent_tasks']} | {one['machine_used_over_baseline_gib']} / "
                     f"{many['machine_used_over_baseline_gib']} | {one['tree_peak_rss_gib']} / "
                     f"{many['tree_peak_rss_gib']} | {t.get('min')} / {t.get('median')} / {t.get('max')} | "
                     f"{len(many['failed'])} ({len(many['failed_for_memory'])}) |")
    lines += ["", "Seconds are spans: the first task's start to the last task's end (Airflow's task instances). "
              "Ratio: N tables ÷ one table (goal for Connect mode: ≤ 4). Mode airflow: the same DAG shape with "
              "no-op tasks (Airflow's own floor, no table); mode passthrough: the same with each assign_and_write a "
              "Connect job of our plan's shape whose Python functions only pass the rows on (a job's floor; "
              f"{meta.get('passthrough_shuffles', 2)} shuffle(s)). "
              "Median task seconds in the N-table run: "]
    for mode, r in result["modes"].items():
        lines.append(f"- {mode}: {r['many']['task_median_s']} (sum over tasks {r['many']['tasks_sum_s']} s)")
    lines.append("- CPU seconds of the run (the machine's busy time; of it the servers' process trees and this "
                 "process's own, dag.test's loop and the executor; the rest, of which: the executor's workers "
                 "(Airflow's supervisors), their task processes (with their spark-submits), and the Connect "
                 "server's Python workers, forked outside its tree), one table / N tables:")
    for mode, r in result["modes"].items():
        lines.append(f"  - {mode}: {r['one'].get('cpu_s')} / {r['many'].get('cpu_s')}")
    for key, what in (("api_server_start_s", "api-server start"), ("connect_server_start_s", "Connect server start")):
        if key in result:
            lines.append(f"- {what} (once, not measured above): {result[key]} s")
    if meta["server_conf"]:
        lines.append(f"- Connect server conf: {meta['server_conf']}")
    return "\n".join(lines) + "\n"


def parse_conf(items: list[str]) -> dict:
    return dict(item.split("=", 1) for item in items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=20, help="table count N")
    parser.add_argument("--rows", type=int, default=1_000_000, help="table size M")
    parser.add_argument("--batch", type=int, default=100_000, help="batch size B")
    parser.add_argument("--parallelism", type=int, default=8, help="tasks running at once ([core] parallelism)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--server-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark conf of the Connect server (e.g. spark.driver.memory=4g)")
    parser.add_argument("--preload", nargs="+", default=[], metavar="MODULE",
                        help="modules imported before the runs (the task processes fork from this one)")
    parser.add_argument("--cold", action="store_true", help="no previous run: the measured run builds the indexes")
    parser.add_argument("--passthrough-shuffles", type=int, choices=(1, 2), default=2,
                        help="mode passthrough: 2 as our plan for a table another writer filled, 1 as for a table "
                             "this provider filled")
    parser.add_argument("--out", type=Path, default=HERE / "results" / datetime.date.today().isoformat())
    args = parser.parse_args()
    api_port = free_port()
    configure_executor(args.parallelism, api_port)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "load_before": load_average(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "parallelism": args.parallelism,
            "cold": args.cold, "server_conf": parse_conf(args.server_conf), "preload": args.preload,
            "passthrough_shuffles": args.passthrough_shuffles}
    for name in args.preload:  # imported here, the executor's workers and their task processes fork with it loaded
        importlib.import_module(name)
    result = run(args.tables, args.rows, args.batch, tuple(args.modes), args.cold, meta["server_conf"], api_port,
                 shuffles=args.passthrough_shuffles)
    meta["load_after"] = load_average()
    (args.out / "many_tables.json").write_text(json.dumps({"meta": meta, **result}, indent=2))
    text = report(result, meta)
    (args.out / "many_tables.md").write_text(text)
    print(text)
    print(f"written to {args.out}", file=sys.stderr)
    for server_log in ("api-server.log", "connect_server.log"):  # the servers' side of any retry or warning
        if (_HOME / server_log).exists():
            shutil.copy(_HOME / server_log, args.out / f"many_tables_{server_log}")
    shutil.rmtree(_HOME, ignore_errors=True)  # Airflow's home, kept when the run fails (its logs say why)


if __name__ == "__main__":
    main()
