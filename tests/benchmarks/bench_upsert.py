"""Benchmark: upsert of a batch of B rows into a cross-partition Paimon table of M rows (id primary key, 30
date partitions, three value columns), ours against the peers, on the same data, in one run:

- ours in-job: cold bootstrap, assign-and-write, commit, warm bootstrap (the next batch's), full compaction —
  the Spark jobs' functions called in one warm local[2] SparkSession (the engine work, no spark-submit);
- ours end to end: the same five tasks, each a ``spark-submit spark_jobs/<job>.py --spec-file .. --result-uri ..``
  as the operators submit it, on an identical copy of the table; plus a trivial spark-submit for reference;
- pypaimon-rust's native writer (table option write.native.enabled=true) upserting into an identical table;
- pure pypaimon writing into the dynamic-bucket equivalent (bucket -1, primary key (id, dt));
- delta-rs (``deltalake``) MERGE into the equivalent Delta table partitioned by dt;
- the floor: pyarrow writing the batch as one parquet file.

The batch: half updates of existing keys (10 % of them move to another partition), half new keys. Every peer
runs in its own subprocess; peak RSS is the largest sum of RSS over the measured process tree, sampled with
psutil every 20 ms (for ours in-job: this process + Spark's JVM + its Python workers). After our upsert the
table is read back with pypaimon and checked (row count, no duplicate key, the batch's dt and amount), so a
fast but wrong run cannot report numbers. Writes results.md, results.json and upsert_time.png to --out.

    python tests/benchmarks/bench_upsert.py [--rows 1000000 5000000] [--batch 100000] [--out DIR]
        [--peers ours ours-e2e pypaimon-rust pypaimon delta floor] [--profile]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: local_runner
from bench_bootstrap import native_write as paimon_write
import processes

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
TABLE = "db.t"
DAYS = 30
PEERS = ("ours", "ours-e2e", "pypaimon-rust", "pypaimon", "delta", "floor")
COLUMNS = [["id", "BIGINT"], ["dt", "DATE"], ["customer", "STRING"], ["amount", "DOUBLE"], ["qty", "INT"]]
CROSS = {"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
         "options": {"bucket": "-1", "write.native.enabled": "true"}}
# pypaimon cannot write cross-partition tables: the dynamic-bucket equivalent keeps dt in the primary key.
DYNAMIC = {"columns": COLUMNS, "primary_keys": ["id", "dt"], "partition_keys": ["dt"], "options": {"bucket": "-1"}}


# ---------------------------------------------------------------------------------------------- data
def rows(ids: np.ndarray, days: np.ndarray, rng) -> pa.Table:
    dates = (np.datetime64("2026-10-01") + days.astype("timedelta64[D]")).astype("datetime64[D]")
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": pa.array(dates),
                     "customer": pa.array(np.char.add("c", rng.integers(0, 100_000, len(ids)).astype(str))),
                     "amount": pa.array(rng.random(len(ids)) * 1000),
                     "qty": pa.array(rng.integers(1, 100, len(ids)), pa.int32())})


def make_data(m: int, b: int, seed: int = 1) -> tuple[pa.Table, pa.Table, dict]:
    """The table's M rows and the batch: b//2 updates (10 % change partition) and the rest new keys."""
    rng = np.random.default_rng(seed)
    base_days = rng.integers(0, DAYS, m)
    updates = rng.choice(m, b // 2, replace=False)
    days = base_days[updates].copy()
    moved = len(updates) // 10
    days[:moved] = (days[:moved] + rng.integers(1, DAYS, moved)) % DAYS  # another partition
    new = np.arange(m, m + b - len(updates))
    ids = np.concatenate([updates, new])
    order = rng.permutation(len(ids))
    batch = rows(ids[order], np.concatenate([days, rng.integers(0, DAYS, len(new))])[order], rng)
    return rows(np.arange(m), base_days, rng), batch, {"updates": len(updates), "moved": moved, "new": len(new)}


# ---------------------------------------------------------------------------------------------- measuring
class PeakRSS:
    """Largest sum of RSS over a process and its descendants, sampled every ``interval`` seconds; and, every
    ``pss_interval`` seconds, the largest sum of PSS (proportional set size: a page shared by n processes counts
    1/n in each). Summed RSS counts a shared page once per process mapping it: Spark's forked Python workers
    share the daemon's imported pages, so their RSS sum exceeds the memory they take. PSS sums to it; reading
    it (smaps_rollup) walks each process's page tables, hence the slower rate."""

    def __init__(self, pid: int, interval: float = 0.02, pss_interval: float | None = 0.25):
        self.pid, self.interval, self.pss_interval, self.peak, self.peak_pss = pid, interval, pss_interval, 0, 0
        self.roles: dict[str, int] = {}  # role -> its processes' largest summed RSS (roles peak apart)
        self.pss_roles: dict[str, int] = {}  # the same for PSS
        self._next_pss = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        import psutil
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0
        with_pss = self.pss_interval is not None and time.monotonic() >= self._next_pss
        if with_pss:
            self._next_pss = time.monotonic() + self.pss_interval
        total, roles, pss_total, pss_roles = 0, {}, 0, {}
        for p in procs:
            try:
                rss, role = p.memory_info().rss, _role(p)
                pss = p.memory_full_info().pss if with_pss else 0
            except psutil.Error:
                continue
            total += rss
            roles[role] = roles.get(role, 0) + rss
            pss_total += pss
            pss_roles[role] = pss_roles.get(role, 0) + pss
        for role, rss in roles.items():
            self.roles[role] = max(self.roles.get(role, 0), rss)
        if with_pss:
            self.peak_pss = max(self.peak_pss, pss_total)
            for role, pss in pss_roles.items():
                self.pss_roles[role] = max(self.pss_roles.get(role, 0), pss)
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._sample())

    @property
    def mib(self) -> float:
        return round(self.peak / 2**20, 1)

    @property
    def roles_mib(self) -> dict[str, float]:
        return {role: round(rss / 2**20, 1) for role, rss in sorted(self.roles.items())}

    @property
    def pss_mib(self) -> float:
        return round(self.peak_pss / 2**20, 1)

    @property
    def pss_roles_mib(self) -> dict[str, float]:
        return {role: round(pss / 2**20, 1) for role, pss in sorted(self.pss_roles.items())}


def _role(p) -> str:
    """What a process of a task's tree is: the JVM, Spark's Python workers, or another Python process."""
    cmdline = " ".join(p.cmdline())
    if "java" in p.name():
        return "jvm"
    if "pyspark.daemon" in cmdline or "pyspark.worker" in cmdline:
        return "python workers"
    return "python"


def measure(fn) -> tuple[dict, object]:
    """Time ``fn()`` in this process; peak RSS of this process tree meanwhile."""
    with PeakRSS(os.getpid()) as rss:
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
    return {"s": round(seconds, 3), "rss_mib": rss.mib}, result


def timed(fn) -> tuple[dict, object]:
    """Time ``fn()`` alone (no RSS sampling)."""
    start = time.perf_counter()
    result = fn()
    return {"s": round(time.perf_counter() - start, 3)}, result


def run_child(cmd: list[str], log: Path, env: dict | None = None) -> dict:
    """Run ``cmd`` to completion; wall seconds and peak RSS of its process tree."""
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = processes.start(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        with PeakRSS(proc.pid) as rss:
            code = proc.wait()
        wall = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"{cmd[:3]} exited {code}:\n" + "".join(log.read_text().splitlines(True)[-30:]))
    return {"wall_s": round(wall, 3), "rss_mib": rss.mib, "rss_mib_by_role": rss.roles_mib, "pss_mib": rss.pss_mib,
            "pss_mib_by_role": rss.pss_roles_mib}


# ---------------------------------------------------------------------------------------------- tables
def catalog_options(warehouse: Path) -> dict:
    return {"warehouse": str(warehouse)}


def load_paimon(warehouse: Path, spec: dict, base: pa.Table, table: str = TABLE) -> float:
    """Create the table and write its M rows with pypaimon-rust's native writer (fast; not measured)."""
    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table

    table = get_or_create_table(catalog_options(warehouse), table, TableSpec.from_dict(spec))
    return paimon_write(table.copy({"write.native.enabled": "true"}), base)


def verify(read: pa.Table, batch: pa.Table, expect_rows: int, what: str) -> None:
    """The upserted table holds each key once, and the batch's values where the batch has them."""
    ids = read.column("id").to_numpy()
    if len(ids) != expect_rows:
        raise AssertionError(f"{what}: {len(ids)} rows read back, expected {expect_rows}")
    order = np.argsort(ids, kind="stable")
    if not np.array_equal(ids[order], np.arange(expect_rows)):
        raise AssertionError(f"{what}: keys are not 0..{expect_rows - 1} exactly once (duplicates or losses)")
    at = order[batch.column("id").to_numpy()]
    for column in ("dt", "amount"):
        got = read.column(column).take(pa.array(at)).combine_chunks()
        if not got.equals(batch.column(column).combine_chunks()):
            raise AssertionError(f"{what}: column {column} does not hold the batch's values")


def read_paimon(warehouse: Path, table: str = TABLE) -> pa.Table:
    from airflow_paimon.engine.table.table import get_table

    builder = get_table(catalog_options(warehouse), table).new_read_builder().with_projection(["id", "dt", "amount"])
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


# ---------------------------------------------------------------------------------------------- peers
def worker(name: str, args: dict) -> dict:
    """One peer's upsert, run in a subprocess (``--worker NAME ARGS``): seconds from reading the batch to
    the committed result."""
    start = time.perf_counter()
    if name in ("pypaimon-rust", "pypaimon"):
        from pypaimon import CatalogFactory
        table = CatalogFactory.create({"warehouse": args["warehouse"]}).get_table(TABLE)
        paimon_write(table, pq.read_table(args["batch"]))
    elif name == "delta":
        from deltalake import DeltaTable
        (DeltaTable(args["path"]).merge(pq.read_table(args["batch"]), "t.id = s.id", source_alias="s",
                                        target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    elif name == "floor":
        batch = pq.read_table(args["batch"])
        start = time.perf_counter()  # the floor is the write alone
        pq.write_table(batch, args["path"])
    else:
        raise ValueError(name)
    return {"s": round(time.perf_counter() - start, 3)}


def fresh_copy(source: Path, target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    return target


def median_run(runs: list[dict], key: str = "s") -> dict:
    """The run with the median ``key`` (the lower middle one for an even count); errors sort last."""
    ordered = sorted(runs, key=lambda r: r.get(key, float("inf")))
    return ordered[(len(ordered) - 1) // 2]


def median_steps(runs: list[dict]) -> dict:
    """Per step, the median run's measurement."""
    return {step: median_run([r[step] for r in runs if step in r]) for step in runs[0]}


def run_peer(name: str, args: dict, work: Path) -> dict:
    log = work / f"{name}.log"
    measured = run_child([sys.executable, __file__, "--worker", name, json.dumps(args)], log)
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    return {**json.loads(lines[-1]), **measured}


def delta_available() -> bool:
    try:
        import deltalake  # noqa: F401
        return True
    except ImportError:
        return False


# ---------------------------------------------------------------------------------------------- ours
def ours(warehouse: Path, shards: int):
    """Our DAG run on ``warehouse``: the specs the operators build (tests/local_runner.py), a full compaction."""
    from local_runner import Pipeline

    return Pipeline(catalog_options(warehouse), TABLE, table_spec=CROSS, shards=shards, dag_id="bench",
                    full_compaction=True)


STEPS = ("cold_bootstrap", "assign_and_write", "commit", "warm_bootstrap", "compact")
JOB_OF = {"cold_bootstrap": "bootstrap_index", "warm_bootstrap": "bootstrap_index",
          "assign_and_write": "assign_and_write", "commit": "commit", "compact": "compact"}


def ours_steps(run_step, pipeline, run_id: str, source: str, on_committed=None) -> tuple[dict, dict]:
    """cold bootstrap → assign-and-write → commit → warm bootstrap → compact of ``pipeline``'s DAG run
    ``run_id`` through ``run_step(job, spec)``, which returns (measurement, result)."""
    out, results, done = {}, {}, {}
    for step in STEPS:
        job = JOB_OF[step]
        try:
            out[step], result = run_step(job, pipeline.spec(job, done, source, run_id))
        except Exception as e:  # compaction failing is a finding, the upsert numbers stand
            if job != "compact":
                raise
            out[step], result = {"error": f"{type(e).__name__}: {_last_error_line(e)}"}, None
        results[step] = done[job] = result
        if step == "commit" and on_committed:
            on_committed()
    if results["cold_bootstrap"]["index_decision"] != "rebuilt" or not results["warm_bootstrap"]["reused"]:
        raise AssertionError(f"bootstrap paths: cold {results['cold_bootstrap']['index_decision']}, "
                             f"warm {results['warm_bootstrap']['index_decision']} (expected rebuilt, then reused)")
    return out, results


def _last_error_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if "Error" in ln or "error" in ln]
    return (lines[-1] if lines else str(e).splitlines()[0])[:300]


def in_job_runner(spark, timer=None):
    """Each job's Spark function on ``spark`` (tests/local_runner.py in_spark), measured."""
    from local_runner import in_spark

    run = in_spark(spark)
    return lambda job, spec: (timer or measure)(lambda: run(job, spec).to_dict())


def submit_command(script: str, name: str, args: list[str], conf: dict | None = None,
                   defaults: bool = True, driver_only: bool | None = None) -> list[str]:
    """What SparkSubmitHook runs for the operators (SparkSubmitBackend.run) on master local[2]: the same
    default conf (``submit_conf``), ``conf`` on top as the operator's ``spark_conf``, and — for a job of a kind,
    ``driver_only`` or not — that kind's class-data-sharing archive, written first by the warm-up as a DAG's
    first run of the kind starts it. ``defaults=False``: a plain spark-submit, only the Python interpreter set."""
    from airflow_paimon.spark.submit import DRIVER_JAVA_OPTIONS, submit_conf, with_driver_archive
    from airflow_paimon.spark.warm_up import warm_up, warm_up_conf

    base = submit_conf(sys.executable, spark_conf=conf)
    if driver_only is not None and defaults:
        if DRIVER_JAVA_OPTIONS not in (conf or {}):  # its archive, as the warm-up writes it
            warm_up(driver_only, warm_up_conf(base), submit_env())
        with_driver_archive(driver_only, base, conf, submit_env())
    if not defaults:
        base = {k: v for k, v in base.items() if k.startswith("spark.pyspark.")}
    pairs = [("--conf", f"{k}={v}") for k, v in {**base, **(conf or {})}.items()]
    return [str(VENV_BIN / "spark-submit"), "--master", "local[2]", *(x for p in pairs for x in p),
            "--name", name, script, *args]


def submit_env() -> dict:
    return {**os.environ, "PATH": str(VENV_BIN) + os.pathsep + os.environ.get("PATH", ""),
            "PYSPARK_PYTHON": sys.executable}


def e2e_runner(work: Path, conf: dict | None = None):
    counter = iter(range(1000))

    from airflow_paimon.handoff import job_arguments, spec_file
    from airflow_paimon.spark.job_registry import JOBS

    def run(job: str, spec: dict):
        n = next(counter)
        # the operators' layout, {results_root}/{dag}/{run}/{task}.json: the commit drops old runs' results there
        result_uri = work / "results" / "bench" / f"e2e-{n}" / f"{job}.json"
        result_uri.parent.mkdir(parents=True, exist_ok=True)
        with spec_file(spec.to_dict()) as spec_path:
            cmd = submit_command(str(ROOT / "spark_jobs" / f"{job}.py"), f"paimon-{job}-{TABLE}",
                                 job_arguments(spec_path, str(result_uri)), conf, driver_only=JOBS[job].driver_only)
            measured = run_child(cmd, work / f"e2e-{n}-{job}.log", submit_env())
        return measured, json.loads(result_uri.read_text())
    return run


TRIVIAL_JOB = """import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("trivial").getOrCreate()
spark.range(1).collect()
open(sys.argv[-1], "w").write(json.dumps({"ok": True}))
"""


def trivial_submit(work: Path, conf: dict | None = None, name: str = "trivial", defaults: bool = True) -> dict:
    """A spark-submit that starts a session and runs one JVM-only job: the fixed cost every submit pays.
    ``defaults=False``: a plain spark-submit (see ``submit_command``)."""
    script = work / "trivial_job.py"
    script.write_text(TRIVIAL_JOB)
    return run_child(submit_command(str(script), name, [str(work / f"{name}.json")], conf, defaults),
                     work / f"{name}.log", submit_env())


# ---------------------------------------------------------------------------------------------- profiling
def profile(spark, warehouse: Path, shards: int, source: str, out: Path, rate: int = 100) -> dict:
    """py-spy (all processes: driver, JVM's Python workers) over a cold bootstrap and one assign-and-write."""
    py_spy = shutil.which("py-spy", path=str(VENV_BIN)) or shutil.which("py-spy")
    if not py_spy:
        return {"skipped": "py-spy is not installed (uv sync --group bench)"}
    # timed without the PeakRSS sampler, whose psutil calls would show up in the profile
    run_step = in_job_runner(spark, timed)
    pipeline, summaries, done = ours(warehouse, shards), {}, {}
    for step, job in (("cold_bootstrap", "bootstrap_index"), ("assign_and_write", "assign_and_write")):
        raw = out / f"profile_{step}.raw.txt"
        spy = processes.start([py_spy, "record", "--pid", str(os.getpid()), "--subprocesses", "--rate", str(rate),
                               "--format", "raw", "--nonblocking", "-o", str(raw)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attached
        measured, done[job] = run_step(job, pipeline.spec(job, done, source, "profile"))
        time.sleep(0.5)
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
        summaries[step] = {**measured, **summarise_profile(raw, out / f"profile_{step}.md", step, measured["s"])}
        raw.unlink(missing_ok=True)  # the summary is what stays
    return summaries


def _frame(frame: str) -> tuple[str, str]:
    """'func (path:line)' → (func, short path:line)."""
    func, _, where = frame.rpartition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", "/work/main/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return func, where


def summarise_profile(raw: Path, md: Path, step: str, seconds: float, top: int = 15) -> dict:
    self_lines, own_incl, samples = Counter(), Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")[1:]  # first item: the process
        if not frames or not count.isdigit():
            continue
        n = int(count)
        samples += n
        func, where = _frame(frames[-1])
        self_lines[f"{where} {func}"] += n
        seen = set()
        for f in frames:
            func, where = _frame(f)
            if where.startswith("airflow_paimon/"):
                key = f"{where.rsplit(':', 1)[0]} {func}"
                if key not in seen:
                    seen.add(key)
                    own_incl[key] += n
    def table(counter: Counter) -> list[str]:
        return [f"| {n} | {100 * n / max(samples, 1):.1f} % | `{k}` |" for k, n in counter.most_common(top)]
    lines = [f"# py-spy profile: {step} ({seconds} s in-job)", "",
             f"{samples} samples over all Python processes (driver and Spark's Python workers, active threads).", "",
             "## Self time by line (leaf frames)", "", "| samples | share | where |", "|---|---|---|",
             *table(self_lines), "", "## Inclusive time of airflow_paimon functions", "",
             "| samples | share | function |", "|---|---|---|", *table(own_incl), ""]
    md.write_text("\n".join(lines))
    return {"samples": samples, "self_top": self_lines.most_common(top),
            "airflow_paimon_top": own_incl.most_common(top)}


# ---------------------------------------------------------------------------------------------- one table size
def bench_size(m: int, b: int, shards: int, peers: tuple, work: Path, spark, log=print, repeat: int = 1) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    base, batch, facts = make_data(m, b)
    batch_path = str(work / "batch.parquet")
    pq.write_table(batch, batch_path)
    expect = m + facts["new"]
    result = {"rows": m, "batch": b, "shards": shards, "repeat": repeat, **facts,
              "load_s": {"make_data": round(time.perf_counter() - start, 2)}, "ours_in_job": {},
              "ours_e2e": {}, "peers": {}, "peer_runs": {}, "load_average": {}, "notes": []}

    def mark(what: str) -> None:  # the machine is shared: the load average (1, 5, 15 min) as each run starts
        result["load_average"][what] = load_average()

    cross = work / "cross"
    result["load_s"]["paimon_cross_native"] = round(load_paimon(cross, CROSS, base), 2)
    log(f"M={m}: loaded the cross-partition table in {result['load_s']['paimon_cross_native']} s")
    copies = {"ours-e2e": work / "wh-ours-e2e"}
    shutil.copytree(cross, copies["ours-e2e"])
    if "pypaimon" in peers:
        result["load_s"]["paimon_dynamic_native"] = round(load_paimon(work / "dynamic", DYNAMIC, base), 2)
    if "delta" in peers:
        if delta_available():
            from deltalake import write_deltalake
            start = time.perf_counter()
            write_deltalake(str(work / "delta"), base, partition_by=["dt"])
            result["load_s"]["delta"] = round(time.perf_counter() - start, 2)
        else:
            peers = tuple(p for p in peers if p != "delta")
            result["notes"].append("delta-rs skipped: deltalake is not installed (uv sync --group bench)")
    del base

    if "ours" in peers:
        runs = []
        for r in range(repeat):  # each run on a fresh copy of the loaded table
            copy = fresh_copy(cross, work / f"wh-ours-{r}")
            mark(f"ours-{r}")
            steps, results = ours_steps(in_job_runner(spark), ours(copy, shards), f"m{m}-{r}", batch_path,
                                        on_committed=lambda copy=copy: verify(read_paimon(copy), batch, expect,
                                                                              "ours in-job"))
            runs.append(steps)
            shutil.rmtree(copy, ignore_errors=True)
        result["ours_in_job"], result["ours_in_job_runs"] = median_steps(runs), runs
        result["ours_in_job_results"] = results
        log(f"M={m}: ours in-job (median of {repeat}) {result['ours_in_job']}")
    if "ours-e2e" in peers:
        mark("ours-e2e")
        result["ours_e2e"], _ = ours_steps(e2e_runner(work), ours(copies["ours-e2e"], shards), f"m{m}", batch_path,
                                           on_committed=lambda: verify(read_paimon(copies["ours-e2e"]), batch,
                                                                       expect, "ours end to end"))
        result["ours_e2e"]["trivial_spark_submit"] = trivial_submit(work, defaults=False)  # plain: the baseline
        log(f"M={m}: ours end to end {result['ours_e2e']}")
    def peer_runs(name: str, loaded: Path | None, key: str, check=None) -> None:
        runs = []
        for r in range(repeat):  # each run on a fresh copy of the loaded table
            target = fresh_copy(loaded, work / f"{name}-{r}") if loaded else work / f"{name}-{r}.parquet"
            mark(f"{name}-{r}")
            runs.append(run_peer(name, {key: str(target), "batch": batch_path}, work))
            if check:
                check(target)
            if loaded:
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
        result["peers"][name], result["peer_runs"][name] = median_run(runs), runs

    if "pypaimon-rust" in peers:
        peer_runs("pypaimon-rust", cross, "warehouse",
                  lambda wh: verify(read_paimon(wh), batch, expect, "pypaimon-rust"))
    if "pypaimon" in peers:
        peer_runs("pypaimon", work / "dynamic", "warehouse")
        result["notes"].append("pypaimon (dynamic bucket, dt in the key): a moved key becomes a new row, the old "
                               "one stays — not the same semantics as a cross-partition upsert")
    if "delta" in peers:
        peer_runs("delta", work / "delta", "path")
    if "floor" in peers:
        peer_runs("floor", None, "path")
    log(f"M={m}: peers {result['peers']}")
    derive(result)
    return result


def derive(r: dict) -> None:
    """Upsert totals, rates, ratios and the targets' inputs."""
    ij, e2e, b, d = r["ours_in_job"], r["ours_e2e"], r["batch"], {}
    if ij:
        write_and_commit = ij["assign_and_write"]["s"] + ij["commit"]["s"]
        d["ours_upsert_in_job_s"] = round(ij["warm_bootstrap"]["s"] + write_and_commit, 3)
        d["ours_first_upsert_in_job_s"] = round(ij["cold_bootstrap"]["s"] + write_and_commit, 3)
        d["cold_bootstrap_keys_per_s_per_core"] = int(r["rows"] / ij["cold_bootstrap"]["s"] / 2)
    if e2e:
        d["ours_upsert_e2e_s"] = round(sum(e2e[s]["wall_s"] for s in ("warm_bootstrap", "assign_and_write", "commit")),
                                       3)
        trivial = e2e["trivial_spark_submit"]["wall_s"]
        if ij:
            d["submit_overhead_s"] = {s: round(e2e[s]["wall_s"] - ij[s]["s"], 3) for s in STEPS
                                      if "s" in ij[s] and "wall_s" in e2e[s]}
            d["submit_overhead_vs_trivial"] = {s: round(v / trivial, 2) for s, v in d["submit_overhead_s"].items()}
    d["rows_per_s"] = {}
    for name, key in (("ours in-job", "ours_upsert_in_job_s"), ("ours end to end", "ours_upsert_e2e_s")):
        if key in d:
            d["rows_per_s"][name] = int(b / d[key])
    d["peer_vs_ours"] = {}
    for peer, m in r["peers"].items():
        d["rows_per_s"][peer] = int(b / m["s"])
        d["peer_vs_ours"][peer] = {k: round(m["s"] / d[key], 2) for k, key in
                                   (("in_job", "ours_upsert_in_job_s"), ("e2e", "ours_upsert_e2e_s")) if key in d}
    r["derived"] = d


# ---------------------------------------------------------------------------------------------- report
PEER_LABEL = {"pypaimon-rust": "pypaimon-rust native writer (cross-partition, in process)",
              "pypaimon": "pure pypaimon (dynamic bucket, in process)", "delta": "delta-rs MERGE (in process)",
              "floor": "floor: pyarrow writes the batch as parquet"}


def fmt_rate(n: float) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.0f} k" if n >= 1e4 else f"{n:,.0f}"


def report(results: list[dict], meta: dict) -> str:
    out = [f"# Upsert benchmark — {meta['date']}", "",
           f"Machine: {meta['machine']}. Load average before / after: {meta['load_before']} / {meta['load_after']}.",
           f"Command: `{meta['command']}`", "",
           "## Upsert of the batch (same data for every system)", "",
           "Ours = warm bootstrap + assign-and-write + commit (a scheduled run, index published by the previous "
           "commit); peers time their whole upsert in their own process (no Spark). `×` = peer time / ours.", "",
           "| M rows | system | seconds | rows/s | × ours in-job | × ours end to end | peak RSS MiB |",
           "|---:|---|---:|---:|---:|---:|---:|"]
    for r in results:
        d, ij, e2e = r["derived"], r["ours_in_job"], r["ours_e2e"]
        if ij:
            rss = max(ij[s]["rss_mib"] for s in ("warm_bootstrap", "assign_and_write", "commit"))
            out.append(f"| {r['rows']:,} | **ours, in-job** | {d['ours_upsert_in_job_s']:.2f} | "
                       f"{fmt_rate(d['rows_per_s']['ours in-job'])} | 1 | | {rss} |")
            out.append(f"| {r['rows']:,} | ours, in-job, first run (cold bootstrap) | "
                       f"{d['ours_first_upsert_in_job_s']:.2f} | "
                       f"{fmt_rate(r['batch'] / d['ours_first_upsert_in_job_s'])}"
                       f" | | | |")
        if e2e:
            rss = max(e2e[s]["rss_mib"] for s in ("warm_bootstrap", "assign_and_write", "commit"))
            out.append(f"| {r['rows']:,} | **ours, end to end** (3 × spark-submit) | {d['ours_upsert_e2e_s']:.2f} | "
                       f"{fmt_rate(d['rows_per_s']['ours end to end'])} | | 1 | {rss} |")
        for peer, m in r["peers"].items():
            ratio = d["peer_vs_ours"][peer]
            out.append(f"| {r['rows']:,} | {PEER_LABEL[peer]} | {m['s']:.2f} | {fmt_rate(d['rows_per_s'][peer])} | "
                       f"{ratio.get('in_job', '')} | {ratio.get('e2e', '')} | {m['rss_mib']} |")
    out += ["", "## Our tasks, step by step", "",
            "In-job: the job's function in a warm local[2] SparkSession. End to end: `spark-submit "
            "spark_jobs/<job>.py` as the operator runs it (wall time). Overhead = end to end − in-job; "
            "÷ trivial = overhead / a trivial spark-submit's wall time.", "",
            "| M rows | step | in-job s | rate | in-job peak RSS MiB | end to end s | e2e peak RSS MiB | overhead s "
            "| overhead ÷ trivial |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        ij, e2e, d = r["ours_in_job"], r["ours_e2e"], r["derived"]
        for s in STEPS:
            if s not in ij and s not in e2e:
                continue
            if "error" in ij.get(s, {}) or "error" in e2e.get(s, {}):
                out.append(f"| {r['rows']:,} | {s.replace('_', ' ')} | failed: {ij.get(s, e2e.get(s))['error']} "
                           "| | | | | | |")
                continue
            n = r["rows"] if "bootstrap" in s or s == "compact" else r["batch"]
            rate = f"{fmt_rate(n / ij[s]['s'])} {'keys' if 'bootstrap' in s else 'rows'}/s" if s in ij else ""
            over = d.get("submit_overhead_s", {}).get(s, "")
            ratio = d.get("submit_overhead_vs_trivial", {}).get(s, "")
            out.append(f"| {r['rows']:,} | {s.replace('_', ' ')} | {ij.get(s, {}).get('s', '')} | {rate} | "
                       f"{ij.get(s, {}).get('rss_mib', '')} | {e2e.get(s, {}).get('wall_s', '')} | "
                       f"{e2e.get(s, {}).get('rss_mib', '')} | {over} | {ratio} |")
        if e2e:
            t = e2e["trivial_spark_submit"]
            out.append(f"| {r['rows']:,} | trivial spark-submit | | | | {t['wall_s']} | {t['rss_mib']} | | |")
    out += ["", "## Load average (1, 5, 15 min) as each run started", "",
            *[f"- M={r['rows']:,}: " + "; ".join(f"{k} {v}" for k, v in r.get("load_average", {}).items())
              for r in results]]
    out += ["", "## Targets (issues 6 and 15)", "", *targets(results), ""]
    notes = sorted({n for r in results for n in r["notes"]}) + meta.get("notes", [])
    if notes:
        out += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(out)


def targets(results: list[dict]) -> list[str]:
    lines, big, small = [], results[-1], results[0]
    d = big["derived"]
    for r in results:
        if "ours_upsert_in_job_s" in r["derived"] and "pypaimon-rust" in r["peers"]:
            x, goal = r["derived"]["peer_vs_ours"]["pypaimon-rust"]["in_job"], ratio_target(r["rows"])
            verdict = f"(target ≥ {goal}×): {'met' if x >= goal else 'NOT met'}" if goal else "(no target at this M)"
            lines.append(f"- upsert of {r['batch']:,} rows into {r['rows']:,}: pypaimon-rust takes {x}× ours in-job "
                         f"{verdict}")
    if len(results) > 1 and "ours_upsert_in_job_s" in d:
        growth = d["ours_upsert_in_job_s"] / small["derived"]["ours_upsert_in_job_s"]
        lines.append(f"- ours in-job from M={small['rows']:,} to {big['rows']:,} ({big['rows'] / small['rows']:.0f}× "
                     f"the table): upsert time × {growth:.2f} (target: roughly flat)")
    for r in results:
        if "cold_bootstrap_keys_per_s_per_core" in r["derived"]:
            k = r["derived"]["cold_bootstrap_keys_per_s_per_core"]
            lines.append(f"- cold bootstrap at M={r['rows']:,}: {fmt_rate(k)} keys/s per core (target ≥ 1 M): "
                         f"{'met' if k >= 1e6 else 'NOT met'}")
    for r in results:
        per_task = task_rss(r)
        if per_task:
            step, mib = max(per_task.items(), key=lambda kv: kv[1])
            lines.append(f"- peak RSS per task at M={r['rows']:,} (spark-submit's process tree): worst {step} "
                         f"{mib:,.0f} MiB (target ≤ 2,048 MiB): {'met' if mib <= 2048 else 'NOT met'}")
    if "submit_overhead_vs_trivial" in d:
        worst = max(d["submit_overhead_vs_trivial"].items(), key=lambda kv: kv[1])
        lines.append(f"- spark-submit overhead per task at M={big['rows']:,}: worst {worst[0]} {worst[1]}× a trivial "
                     f"spark-submit (target ≤ 1.3×): {'met' if worst[1] <= 1.3 else 'NOT met'}")
    return lines


def ratio_target(rows: int) -> int | None:
    """pypaimon-rust's time ÷ ours in-job: ≥ 5× at 5M (issue 6), ≥ 20× at 20M (issue 15); no target below 5M,
    where our fixed per-job costs are most of the time."""
    return 20 if rows >= 20_000_000 else 5 if rows >= 5_000_000 else None


def task_rss(r: dict, measure: str = "rss_mib") -> dict[str, float]:
    """Peak RSS (or ``pss_mib``: PSS) MiB of each of our tasks run as its own spark-submit (JVM + Python workers):
    a task's memory."""
    return {s: m[measure] for s, m in r["ours_e2e"].items() if s in STEPS and measure in m}


def plot(results: list[dict], path: Path) -> str | None:
    try:
        import matplotlib
    except ImportError:
        return "plot skipped: matplotlib is not installed (uv sync --group bench)"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["rows"] for r in results]
    series = {"ours, in-job": [r["derived"].get("ours_upsert_in_job_s") for r in results],
              "ours, end to end": [r["derived"].get("ours_upsert_e2e_s") for r in results]}
    for peer, label in PEER_LABEL.items():
        series[label] = [r["peers"].get(peer, {}).get("s") for r in results]
    with_rss = any(task_rss(r) for r in results)
    fig, axes = plt.subplots(1, 2 if with_rss else 1, figsize=(14 if with_rss else 8, 5), squeeze=False)
    ax = axes[0][0]
    for label, ys in series.items():
        points = [(x, y) for x, y in zip(sizes, ys) if y is not None]
        if points:
            ax.plot(*zip(*points), marker="o", label=label)
    ax.set_xlabel("table size M (rows)")
    ax.set_ylabel(f"upsert time of {results[0]['batch']:,} rows (s)")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if with_rss:
        rss = axes[0][1]
        for step in STEPS:
            points = [(r["rows"], task_rss(r)[step]) for r in results if step in task_rss(r)]
            if points:
                rss.plot(*zip(*points), marker="o", label=step.replace("_", " "))
        rss.axhline(2048, color="red", linestyle="--", label="2 GiB per task")
        rss.set_xlabel("table size M (rows)")
        rss.set_ylabel("peak RSS per task, spark-submit (MiB)")
        rss.set_xticks(sizes, [f"{s:,}" for s in sizes])
        rss.grid(True, which="both", alpha=0.3)
        rss.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# ---------------------------------------------------------------------------------------------- main
def make_spark():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers' Python (spark.pyspark.python alone is not enough)
    from airflow_paimon.spark.job_frame import ARROW_MAX_BYTES, ARROW_MAX_BYTES_DEFAULT

    # as spark_jobs' spark_session(): one shuffle partition per core, Arrow on, Arrow batches cut at the jobs'
    # size; local[2] as the DAGs' connection
    spark = (SparkSession.builder.master("local[2]").appName("bench-upsert")
             .config("spark.pyspark.python", sys.executable).config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").config("spark.ui.enabled", "false")
             .config(ARROW_MAX_BYTES, ARROW_MAX_BYTES_DEFAULT).getOrCreate())
    spark.range(1).collect()  # JVM up, as in a running job
    # Python workers up with the engine imported, so the first M measured pays no worker start-up either
    # (that is spark-submit overhead, measured end to end)
    spark.range(4, numPartitions=2).mapInArrow(_worker_warm_up(), "id long").collect()
    return spark


def _worker_warm_up():
    def warm(batches):  # nested: pickled by value, so workers need not import this module
        import airflow_paimon.engine.runs.assign_shard
        import airflow_paimon.engine.index.bootstrap
        import airflow_paimon.engine.write.task  # noqa: F401

        yield from batches
    return warm


def machine() -> str:
    import psutil
    return (f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
            f"Python {platform.python_version()}, {java_version()}")


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr
        return "Java " + out.split('"')[1] if '"' in out else "Java ?"
    except (OSError, subprocess.SubprocessError):
        return "Java ?"


def run(sizes: list[int], batch: int, out: Path, peers: tuple = PEERS, shards: int = 4, spark=None,
        profile_rows: int | None = None, work: Path | None = None, log=print, repeat: int = 1) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    own_work = work is None
    work = work or Path(tempfile.mkdtemp(prefix="bench-upsert-"))
    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "load_before": load_average(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "peers": list(peers), "notes": []}
    spark = spark or make_spark()
    try:
        if "ours" in peers:
            warm_up(spark, shards, work / "warm-up", log)
            meta["notes"].append("ours in-job ran once on a 2,000-row table first (JVM and pipeline warm)")
        if repeat > 1:
            meta["notes"].append(f"ours in-job and every peer: median of {repeat} runs, each on a fresh copy of the "
                                 "loaded table (all runs in results.json); ours end to end: one run")
        results = [bench_size(m, batch, shards, peers, work / f"m{m}", spark, log, repeat) for m in sizes]
        if profile_rows:
            m = profile_rows if profile_rows in sizes else sizes[0]
            shutil.copytree(work / f"m{m}" / "cross", work / f"m{m}" / "wh-profile")  # as loaded, never written
            meta["profile"] = profile(spark, work / f"m{m}" / "wh-profile", shards,
                                      str(work / f"m{m}" / "batch.parquet"), out)
            meta["profile_rows"] = m
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = load_average()
    note = plot(results, out / "upsert_time.png")
    if note:
        meta["notes"].append(note)
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2, default=str))
    (out / "results.md").write_text(report(results, meta))
    return results


def warm_up(spark, shards: int, work: Path, log=print) -> None:
    """Our five steps once on a tiny table, unmeasured: the first run of each query shape in a JVM pays
    class loading and JIT (≈2 s), which belongs to a spark-submit's overhead, measured end to end."""
    work.mkdir(parents=True)
    base, batch, _ = make_data(2_000, 200)
    pq.write_table(batch, work / "batch.parquet")
    load_paimon(work / "cross", CROSS, base)
    ours_steps(in_job_runner(spark, timed), ours(work / "cross", shards), "warm-up", str(work / "batch.parquet"))
    log("warmed up: ours in-job once on a 2,000-row table")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], json.loads(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000], help="table sizes M")
    parser.add_argument("--batch", type=int, default=100_000, help="batch size B")
    parser.add_argument("--shards", type=int, default=4, help="index shards (the operator's default)")
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours in-job and of each peer, each on a "
                                                                "fresh copy of the table; the median is reported")
    parser.add_argument("--profile", action="store_true", help="py-spy a cold bootstrap and an assign-and-write "
                                                               "at the smallest M")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "benchmarks" / "results" /
                        datetime.date.today().isoformat())
    args = parser.parse_args()
    run(sorted(args.rows), args.batch, args.out, tuple(args.peers), args.shards,
        profile_rows=min(args.rows) if args.profile else None, repeat=args.repeat)
    print((args.out / "results.md").read_text())
    print(f"written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
