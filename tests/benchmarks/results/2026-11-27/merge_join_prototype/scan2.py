import sys, os, time, tempfile, shutil
from itertools import islice
ROOT = os.environ.get("ROOT", "/work/main")  # a checkout of the repository
sys.path.insert(0, ROOT); sys.path.insert(0, ROOT + "/tests/benchmarks")
import pyarrow as pa
from rocksdict import ReadOptions
from bench_index_lookup import make_shard, make_batch, fresh_index
K = 5000000
work = tempfile.mkdtemp(); sst = os.path.join(work, "s.sst"); ids = make_shard(K, sst)
with fresh_index(sst, work) as ix:
    t = time.perf_counter(); n = sum(1 for _ in ix._db.items()); print("items count", time.perf_counter() - t)
with fresh_index(sst, work) as ix:
    t = time.perf_counter(); n = sum(1 for _ in ix._db.keys()); print("keys count", time.perf_counter() - t)
with fresh_index(sst, work) as ix:
    it = iter(ix._db.items()); t = time.perf_counter(); tz = 0; ta = 0
    while True:
        c = list(islice(it, 1 << 16))
        if not c: break
        t1 = time.perf_counter(); ks, vs = zip(*c); t2 = time.perf_counter()
        a = pa.array(ks, pa.binary()); b = pa.array(vs, pa.binary()); t3 = time.perf_counter()
        tz += t2 - t1; ta += t3 - t2
    print("chunked total", time.perf_counter() - t, "zip", tz, "pa.array", ta)
with fresh_index(sst, work) as ix:
    it = ix._db.iter(); it.seek_to_first(); t = time.perf_counter(); n=0
    while it.valid():
        k = it.key(); v = it.value(); it.next(); n+=1
    print("raw iter", time.perf_counter() - t)
shutil.rmtree(work)
