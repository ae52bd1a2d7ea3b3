"""bench_batch_size with extra spark conf for the end-to-end spark-submits: MEM_CONF='k=v,k=v'."""
import os, sys
sys.path.insert(0, os.path.join(os.environ.get("INJ_ROOT", "."), "tests", "benchmarks"))
import bench_upsert
conf = dict(kv.split("=", 1) for kv in os.environ.get("MEM_CONF", "").split(",") if kv)
real = bench_upsert.e2e_runner
bench_upsert.e2e_runner = lambda work, c=None: real(work, {**(c or {}), **conf})
import bench_batch_size
print("extra conf:", conf, flush=True)
sys.argv = ["bench_batch_size.py"] + sys.argv[1:]
bench_batch_size.main()
