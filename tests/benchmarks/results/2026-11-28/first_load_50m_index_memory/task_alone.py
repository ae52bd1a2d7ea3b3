"""One Spark task's share of a first load, in process: the rows of 2 shards streamed into WriteBuffer, assigned
and written as spark/pipelines/cross_partition.py's task does. RSS sampled every 50 ms by phase."""
import os, sys, threading, time, tempfile
from pathlib import Path
sys.path[:0] = ["/work/main/tests", "/work/main/tests/benchmarks"]
import numpy as np, pyarrow as pa, psutil
import bench_upsert
from local_runner import in_process
from airflow_paimon.engine.assign.assigner import ORDER, ROW_KIND, BUCKET
from airflow_paimon.engine.write.buffer import WriteBuffer
from airflow_paimon.engine.runs.cross_partition import assign_and_write_shards
from airflow_paimon.spark.pipelines.common import writer
from airflow_paimon.spark.routing import groups

ROWS = int(sys.argv[1])
work = Path(tempfile.mkdtemp(prefix="memprof-", dir="/work/tmp" if os.path.isdir("/work/tmp") else None))
pipeline = bench_upsert.ours(work / "wh", 2)
boot = in_process("bootstrap_index", pipeline.spec("bootstrap_index", {}))
spec = pipeline.spec("assign_and_write", {"bootstrap_index": boot.to_dict()}, run_id="first")
proc, trace, phase = psutil.Process(), [], ["start"]
def sample():
    while phase[0] != "done":
        trace.append((time.perf_counter(), phase[0], proc.memory_info().rss >> 20)); time.sleep(0.05)
threading.Thread(target=sample, daemon=True).start()
rng = np.random.default_rng(7)

def batches():
    for lo in range(0, ROWS, 100_000):
        ids = np.arange(lo, min(ROWS, lo + 100_000))
        t = bench_upsert.rows(ids, rng.integers(0, bench_upsert.DAYS, len(ids)), rng)
        t = t.append_column(ORDER, pa.array(ids, pa.int64())).append_column(ROW_KIND, pa.array(np.zeros(len(ids), np.int8)))
        yield from t.to_batches()

def write(source, ctx, shape):
    w, group_by = writer(ctx), [*ctx.partition_keys, BUCKET]
    out = []
    with WriteBuffer(ctx.primary_keys, ctx.shards, ctx.write_buffer_bytes, str(work)) as buffer:
        phase[0] = "extend"; buffer.extend(batches())
        phase[0] = "assign"
        for t in assign_and_write_shards(ctx, buffer, lambda rows: [w(b) for b in groups(rows, group_by)]):
            phase[0] = "write"
            out += t.to_pylist()
    return out

empty = bench_upsert.rows(np.arange(0), np.arange(0), rng)
t0 = time.perf_counter()
res = in_process("assign_and_write", spec, rows=empty, write=write)
phase[0] = "done"
print("seconds", round(time.perf_counter() - t0, 1), "files", res.files if hasattr(res, "files") else "?")
peaks = {}
for _, p, r in trace: peaks[p] = max(peaks.get(p, 0), r)
print("peak RSS MiB by phase", peaks)
import json; json.dump(trace, open(os.environ.get("TRACE", "/tmp/memprof/trace.json"), "w"))
