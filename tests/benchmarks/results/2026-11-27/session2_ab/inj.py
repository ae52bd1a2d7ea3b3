"""In-job assign-and-write of B rows into an M-row table: variants interleaved, each on a fresh copy."""
import os, shutil, sys, time, json
from pathlib import Path
ROOT = Path(os.environ.get("INJ_ROOT", "/work/main"))
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT / "tests")]
import bench_upsert as bu
import pyarrow.parquet as pq
m, b, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
variants = sys.argv[4].split(",")  # names: tasks8, tasks2, driver
work = Path(os.environ.get("INJ_WORK", "/tmp/perf") + f"/inj-{m}"); work.mkdir(parents=True, exist_ok=True)
base, batch, facts = bu.make_data(m, b)
bp = str(work / "batch.parquet"); pq.write_table(batch, bp)
print("batch file bytes", os.path.getsize(bp), flush=True)
cross = work / "cross"
if not cross.exists():
    bu.load_paimon(cross, bu.CROSS, base)
del base
spark = bu.make_spark()
try:
    from airflow_paimon.spark.pipelines.in_driver import MAX_BYTES_CONF
except ImportError:
    MAX_BYTES_CONF = 'spark.airflow_paimon.unused'
runner = bu.in_job_runner(spark, bu.timed)
# one warm bootstrap state: cold bootstrap on a master copy once
master = work / "master"
if not master.exists():
    shutil.copytree(cross, master)
    pipe = bu.ours(master, 4)
    _, boot = runner("bootstrap_index", pipe.spec("bootstrap_index", {}, bp, "boot"))
    (work / "boot.json").write_text(json.dumps(boot))
boot = json.loads((work / "boot.json").read_text())
res = {v: [] for v in variants}
for i in range(n):
    for v in variants:
        copy = bu.fresh_copy(master, work / "copy")
        spark.conf.set("spark.sql.shuffle.partitions", "8" if v == "tasks8" else "2")
        spark.conf.set(MAX_BYTES_CONF, str(2**30) if v == "driver" else "0")
        pipe = bu.ours(copy, 4)
        spec = pipe.spec("assign_and_write", {"bootstrap_index": boot}, bp, f"r{i}{v}")
        spy = None
        if os.environ.get("SPYV") == v and i == n - 1:
            import subprocess
            spy = subprocess.Popen([str(ROOT / ".venv/bin/py-spy"), "record", "--pid", str(os.getpid()), "--subprocesses",
                                    "--idle", "-r", "100", "-f", "raw", "-o", str(work / f"spy-{v}.txt")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
        t, out = runner("assign_and_write", spec)
        if spy:
            spy.send_signal(2); spy.wait()
        res[v].append(t["s"])
        print(v, t["s"], out["files"], out["rows_written"], os.getloadavg(), flush=True)
print({v: sorted(x) for v, x in res.items()})
