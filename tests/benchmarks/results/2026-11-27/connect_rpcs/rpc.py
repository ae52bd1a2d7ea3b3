"""Count the Spark Connect RPCs of one DAG run's jobs, run as ConnectBackend runs them (execute_job, a JobRun
with the server's URL: a session per job)."""
import collections, json, os, sys, time
from pathlib import Path
ROOT = Path(os.environ.get("ROOT", "/work/main"))
sys.path[:0] = [str(ROOT / "tests" / "benchmarks"), str(ROOT / "tests")]
import bench_upsert as bu, bench_connect as bc
import pyarrow.parquet as pq
from pyspark.sql.connect.proto import base_pb2_grpc
calls, rkinds = collections.Counter(), collections.Counter()
init = base_pb2_grpc.SparkConnectServiceStub.__init__
def counted_init(self, channel):
    init(self, channel)
    for name in list(vars(self)):
        f = getattr(self, name)
        def wrap(*a, _f=f, _n=name, **k):
            calls[_n] += 1
            if _n in ("Config", "AnalyzePlan") and os.environ.get("WHERE"):
                import traceback
                w = [f"{Path(fr.filename).name}:{fr.lineno}:{fr.name}" for fr in traceback.extract_stack() if "airflow_paimon" in fr.filename or "pyspark/sql/connect/session" in fr.filename][-3:]
                req = a[0] if a else None
                op = req.operation.WhichOneof("op_type") if _n == "Config" else req.WhichOneof("analyze")
                print("   ", _n, op, " < ".join(reversed(w)))
            r = _f(*a, **k)
            if _n in ("ExecutePlan", "ReattachExecute"):
                def it(r=r):
                    for resp in r:
                        rkinds[resp.WhichOneof("response_type")] += 1
                        yield resp
                return it()
            return r
        setattr(self, name, wrap)
base_pb2_grpc.SparkConnectServiceStub.__init__ = counted_init
from airflow_paimon.spark.job_frame import JobRun, execute_job
from airflow_paimon.spark.job_runner import job_function
from airflow_paimon.spark.job_registry import JOBS
work = Path("/tmp/rpc/work"); work.mkdir(parents=True, exist_ok=True)
m, b, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
base, batch, facts = bu.make_data(m, b)
bp = str(work / "batch.parquet"); pq.write_table(batch, bp)
master = work / f"master-{m}"
if not master.exists():
    bu.load_paimon(master, bu.CROSS, base)
port = 15123
server = bc.start_connect_server(port, work / "server.log")
try:
    for rnd in range(rounds):
        copy = bu.fresh_copy(master, work / "copy")
        pipe = bu.ours(copy, 4)
        out = {}
        for job in ("bootstrap_index", "assign_and_write", "commit"):
            spec = pipe.spec(job, dict(out), bp, f"r{rnd}") if job == "assign_and_write" else pipe.spec(job, dict(out))
            calls.clear(); rkinds.clear()
            result = work / "result.json"
            cpu0, t0 = time.process_time(), time.perf_counter()
            ok = execute_job(job_function(JOBS[job]), JOBS[job].spec, spec.to_dict(), JobRun(str(result), remote=f"sc://127.0.0.1:{port}", conf={}))
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            assert ok, result.read_text()
            out[job] = json.loads(result.read_text())
            print(f"round {rnd} {job}: {wall:.3f} s, client CPU {cpu:.3f} s; RPCs {dict(calls)}; responses {dict(rkinds)}", flush=True)
finally:
    server.terminate(); server.wait()
