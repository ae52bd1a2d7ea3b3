import sys, os, time, tempfile, shutil, statistics
from itertools import islice
ROOT = os.environ.get("ROOT", "/work/main")  # a checkout of the repository
sys.path.insert(0, ROOT); sys.path.insert(0, ROOT + "/tests/benchmarks")
import numpy as np, pyarrow as pa, pyarrow.compute as pc
from rocksdict import ReadOptions
from bench_index_lookup import make_shard, make_batch, fresh_index
from airflow_paimon.engine.codec.keys import sort_keys

CH = 1 << 16
def bisect_right(arr, x, lo):
    hi = len(arr)
    while lo < hi:
        mid = (lo + hi) // 2
        if arr[mid].as_py() <= x: lo = mid + 1
        else: hi = mid
    return lo

def scan_lookup(ix, keys):
    ordered = sort_keys(keys)
    okeys = keys.take(pa.array(ordered.order))
    n = len(okeys)
    ro = ReadOptions(); ro.fill_cache(False)
    items = iter(ix._db.items(read_opt=ro))
    parts = []; start = 0
    while start < n:
        chunk = list(islice(items, CH))
        if not chunk: break
        ks, vs = zip(*chunk)
        end = bisect_right(okeys, ks[-1], start)
        if end > start:
            pos = pc.index_in(okeys.slice(start, end - start), value_set=pa.array(ks, pa.binary()))
            parts.append(pa.array(vs, pa.binary()).take(pos))
        start = end
    if start < n: parts.append(pa.nulls(n - start, pa.binary()))
    back = np.empty_like(ordered.order); back[ordered.order] = np.arange(n)
    return pa.concat_arrays(parts).take(back)

K, B = int(sys.argv[1]), int(sys.argv[2])
work = tempfile.mkdtemp()
sst = os.path.join(work, "s.sst"); ids = make_shard(K, sst); keys, known = make_batch(ids, B)
res = {"ours": [], "scan": []}
for r in range(3):
    for name, fn in [("ours", lambda ix: ix.lookup(keys)), ("scan", lambda ix: scan_lookup(ix, keys))]:
        with fresh_index(sst, work) as ix:
            t = time.perf_counter(); out = fn(ix); res[name].append(time.perf_counter() - t)
            if r == 0: print(name, out.null_count, len(out), pc.sum(pc.binary_length(out)).as_py())
for n, v in res.items(): print(n, f"{statistics.median(v):.3f}s", f"{statistics.median(v)/B*1e6:.2f}us/batchkey")
shutil.rmtree(work)
