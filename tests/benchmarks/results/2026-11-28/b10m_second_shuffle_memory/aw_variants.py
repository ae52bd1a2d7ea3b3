"""B = 10M into the 20M cross-partition table (bench_upsert's data, loaded by pypaimon-rust, so assign-and-write
takes the second shuffle): the table loaded and bootstrapped once, then assign-and-write run as the operators
submit it, once per variant (the warehouse restored in place before each), with a timeline of PSS by role every
0.5 s (workers split into anon and file-backed PSS from /proc/<pid>/smaps_rollup).

    python aw_variants.py OUT_DIR NAME=JSON_CONF [NAME=JSON_CONF ...]
"""
import json, os, shutil, subprocess, sys, tempfile, threading, time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[5]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "benchmarks")]
import psutil, pyarrow.parquet as pq
import bench_upsert
from bench_upsert import e2e_runner, make_data, load_paimon, CROSS, ours

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
variants = [(a.split("=", 1)[0], json.loads(a.split("=", 1)[1])) for a in sys.argv[2:]]
work = Path(tempfile.mkdtemp(prefix="aw-variants-", dir="/work/tmp" if os.path.isdir("/work/tmp") else None))


def rollup(pid):
    vals = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Pss", "Pss_Anon", "Pss_File", "Rss"):
                vals[k] = int(v.split()[0]) >> 10
    return vals


class Timeline:
    def __init__(self):
        self.rows, self.stop = [], threading.Event()

    def run(self, pid):
        t0 = time.monotonic()
        while not self.stop.is_set():
            try:
                procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
            except psutil.Error:
                break
            row = {"t": round(time.monotonic() - t0, 1)}
            for p in procs:
                try:
                    role, r = bench_upsert._role(p), rollup(p.pid)
                except (psutil.Error, OSError):
                    continue
                for k, v in r.items():
                    row[f"{role}:{k}"] = row.get(f"{role}:{k}", 0) + v
            row["total:Pss"] = sum(v for k, v in row.items() if k.endswith(":Pss"))
            self.rows.append(row)
            self.stop.wait(0.5)


start = time.perf_counter()
base, batch, facts = make_data(20_000_000, 10_000_000)
batch_path = str(work / "batch.parquet")
pq.write_table(batch, batch_path)
wh = work / "wh"
print("load", round(load_paimon(wh, CROSS, base), 1), "s", flush=True)
del base
pipeline = ours(wh, 4)
runner = e2e_runner(work)
m, boot = runner("bootstrap_index", pipeline.spec("bootstrap_index", {}, batch_path, "b10m"))
print("bootstrap", m, flush=True)
shutil.copytree(wh, work / "wh-base")
results = {}
for name, conf in variants:
    shutil.rmtree(wh); shutil.copytree(work / "wh-base", wh)
    spec = pipeline.spec("assign_and_write", {"bootstrap_index": boot}, batch_path, "b10m")
    timeline = Timeline()
    orig = bench_upsert.processes.start

    def start_and_watch(*a, **k):
        proc = orig(*a, **k)
        threading.Thread(target=timeline.run, args=(proc.pid,), daemon=True).start()
        return proc
    bench_upsert.processes.start = start_and_watch
    try:
        m, res = e2e_runner(work, conf)("assign_and_write", spec)
    finally:
        bench_upsert.processes.start = orig
        timeline.stop.set()
    peak = max(timeline.rows, key=lambda r: r["total:Pss"])
    results[name] = {"conf": conf, "measured": m, "peak_row": peak, "timeline": timeline.rows}
    print(name, json.dumps(m), "peak at", json.dumps(peak), flush=True)
    (out / "variants.json").write_text(json.dumps(results, indent=1))
shutil.rmtree(work, ignore_errors=True)
print("total", round(time.perf_counter() - start), "s")
