import sys, time, threading, os
import numpy as np, pyarrow as pa
from airflow_paimon.engine.memory import release_free_memory
from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.index import shard as S
from airflow_paimon.engine.index.shard import ShardIndex, encode_values
S.HELD_CHANGES = int(os.environ.get("HELD", S.HELD_CHANGES))
if os.environ.get("NOMMAP"):
    _o = S._options
    def _nomap(opts=S.DEFAULTS):
        o = _o(opts); o.set_allow_mmap_reads(False); return o
    S._options = _nomap
N, CH = int(sys.argv[1]), 400_000
phase=["start"]; trace=[]
def status():
    d={}
    for line in open("/proc/self/status"):
        if line.startswith(("RssAnon","RssFile","RssShmem")): k,v=line.split(":"); d[k]=int(v.split()[0])>>10
    return d
def sample():
    while phase[0]!="done":
        trace.append((phase[0], status())); time.sleep(0.02)
threading.Thread(target=sample,daemon=True).start()
perm = np.random.default_rng(1).permutation(N)
with ShardIndex(workdir="/tmp/memprof") as idx:
    idx.disjoint = True
    phase[0]="put"; t_put=time.perf_counter()
    for lo in range(0, N, CH):
        ids = perm[lo:lo+CH]
        keys = encode_keys(pa.table({"id": pa.array(ids, pa.int64())}), ["id"])
        idx.lookup(keys)
        days = pa.array(np.char.add("2026-10-", (ids % 30 + 1).astype(str)))
        idx.put(keys, encode_values(ids % 7, days))
    phase[0]="export"
    release_free_memory(); t=time.perf_counter(); n=idx.export_full("/tmp/memprof/full.sst"); e=time.perf_counter()-t
    phase[0]="done"
print("put s", round(t-t_put,1), "exported", n, "in", round(e,1), "s; sst MiB", os.path.getsize("/tmp/memprof/full.sst")>>20)
peak={}
for p,d in trace:
    tot=d["RssAnon"]+d["RssFile"]
    if tot>peak.get(p,(0,))[0]: peak[p]=(tot,d)
print(peak)
