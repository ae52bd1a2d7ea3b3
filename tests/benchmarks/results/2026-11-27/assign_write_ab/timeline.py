"""Timeline of the example's daily assign-and-write spark-submit: day 1 written in-process... actually via
spark-submits; day 2's assign-and-write run N times on fresh copies, its stderr stamped on arrival."""
import json, os, shutil, subprocess, sys, time, tempfile
from pathlib import Path
ROOT = Path("/work/wt-perf")
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT / "tests"), str(ROOT / "dags")]
import bench_upsert as bu
from run_example import demo_batches
from local_runner import Pipeline
from paimon_upsert_daily import TABLE, TABLE_SCHEMA

work = Path(sys.argv[1]); n = int(sys.argv[2]); extra = dict(c.split("=", 1) for c in sys.argv[3:] if c != "AB"); ab = "AB" in sys.argv
work.mkdir(parents=True, exist_ok=True)
days = ["2026-11-01", "2026-11-02", "2026-11-03"]
srcs = []
for d, b in zip(days, demo_batches(days)):
    p = work / f"{d}.parquet"; b.to_parquet(p, index=False); srcs.append(str(p))
wh = work / "wh"
base = work / "base"
if not base.exists():
    shutil.rmtree(wh, ignore_errors=True)
    pipe = Pipeline({"warehouse": str(wh)}, TABLE, table_spec=TABLE_SCHEMA, shards=4, dag_id="tl",
                    run_job=lambda job, spec: bu.e2e_runner(work)(job, spec)[1] and None)
    run = bu.e2e_runner(work)
    done = {}
    for job in ("bootstrap_index", "assign_and_write", "commit"):
        m, done[job] = run(job, pipe.spec(job, done, srcs[0], "d1"))
        print("day1", job, m["wall_s"], flush=True)
    m, boot = run("bootstrap_index", pipe.spec("bootstrap_index", {}))
    print("day2 bootstrap", m["wall_s"], boot.get("index_decision"), flush=True)
    shutil.copytree(wh, base)
    (work / "boot.json").write_text(json.dumps(boot))
boot = json.loads((work / "boot.json").read_text())
from airflow_paimon.handoff import spec_file
for i in range(n):
    if os.environ.get('CACHES'): os.environ['XDG_CACHE_HOME'] = os.environ['CACHES'].split(',')[i % 2]
    conf = {**extra, **({"spark.airflow_paimon.driverWriteMaxBytes": "0"} if ab and i % 2 else {})}
    shutil.rmtree(wh, ignore_errors=True); shutil.copytree(base, wh)
    pipe = Pipeline({"warehouse": str(wh)}, TABLE, table_spec=TABLE_SCHEMA, shards=4, dag_id="tl")
    spec = pipe.spec("assign_and_write", {"bootstrap_index": boot}, srcs[1], f"d2-{i}")
    res = work / f"res-{i}.json"
    with spec_file(spec.to_dict()) as sp:
        cmd, archive = bu.submit_command(str(ROOT / "spark_jobs/assign_and_write.py"), "paimon-aw", ["--spec-file", sp, "--result-uri", str(res)], conf or None, job="assign_and_write")
        if os.environ.get('SPY'): cmd = [str(ROOT/'.venv/bin/py-spy'), 'record', '--subprocesses', '--idle', '-r', '50', '-f', 'raw', '-o', str(work/f'spy-{i}.txt'), '--', *cmd]
        t0 = time.perf_counter(); lines = []
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=bu.submit_env(), text=True)
        for line in p.stdout:
            lines.append(f"{time.perf_counter()-t0:7.3f} {line.rstrip()}")
        p.wait(); wall = time.perf_counter() - t0
        if archive: archive.finish(p.returncode == 0)
    (work / f"log-{i}.txt").write_text("\n".join(lines))
    print(f"run {i} {conf} {os.environ.get('XDG_CACHE_HOME')}: {wall:.2f} s rc={p.returncode} load={os.getloadavg()}", flush=True)
