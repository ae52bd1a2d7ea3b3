import sys, time, tempfile, os, dataclasses
HERE = os.path.dirname(os.path.abspath(__file__)); sys.path[:0] = [os.path.join(HERE, "../../.."), os.path.join(HERE, "../../../..")]
import bench_index_lookup as b
from airflow_paimon.engine.index.shard import ShardIndex, DEFAULTS
def status():
    d = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("RssAnon", "RssFile"):
            d[k] = int(v.split()[0]) >> 10
    return d
cache_mb, mapped = int(sys.argv[1]), sys.argv[2] == "mapped"
work = tempfile.mkdtemp()
sst = os.path.join(work, "shard.sst")
ids = b.make_shard(5_000_000, sst)
keys, _ = b.make_batch(ids, 2_500_000)
s0 = status()
os.makedirs(os.path.join(work, "db"))
ix = ShardIndex(os.path.join(work, "db"), dataclasses.replace(DEFAULTS, block_cache_bytes=cache_mb << 20), mapped=mapped)
copy = os.path.join(work, "db", "in.sst"); os.link(sst, copy); ix.ingest([copy], move=True)
times = []
for _ in range(2):
    t = time.perf_counter(); out = ix.lookup(keys); times.append(round(time.perf_counter() - t, 2)); del out
s1 = status()
print(f"cache {cache_mb} MB {'mapped' if mapped else 'unmapped'}: lookups {times} s; anon +{s1['RssAnon']-s0['RssAnon']} file +{s1['RssFile']-s0['RssFile']} MiB; cache {ix._db.property_int_value('rocksdb.block-cache-usage')>>20} MiB", flush=True)
