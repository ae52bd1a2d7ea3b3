"""Benchmark: the floors of a PySpark write on this machine — what no job shaped as this provider's (each task a
PySpark job, the global index in the Python workers) can go below, whatever the engine inside it does.

- Throughput: in one warm ``local[2]`` session, B rows of bench_upsert's batch (a parquet file) read, shuffled
  by key over the cores and handed to Python workers through ``mapInArrow``, which only counts them — the
  least an assign-and-write does before assigning anything. Also the same without Python (the JVM hashes every
  column of the shuffled rows), to show what the hand-over to Python costs. Rows/s per core, best of ``--repeat``.
- Latency: spark-submits as the operators submit them (their conf and the class-data-sharing archive of the job's
  kind, which the warm-up writes first when there is none; a first run unmeasured; best of ``--repeat``): a PySpark
  job running one Python task, whose workers fork from the operators' daemon (the imports assign-and-write's workers
  need), and a driver-only job that imports pypaimon and the engine and reads a table's latest snapshot (what the
  commit needs before it writes anything). Their sum is the least a spark-submit-mode DAG run can take, the
  bootstrap decided from metadata. Beside it, pypaimon-rust's upsert of ``--peer-batch`` rows into ``--peer-rows``
  (bench_upsert's table, batch and check) when ``--peer-rows`` is given.
- The write's parts (``--part-keys``): what the libraries an assign-and-write must call cost per row, each alone on
  one core, beside the hand-over of the same run — rocksdict's multi-get of a batch's keys in an index shard
  (bench_index_lookup's shard and batch: half the keys known), rocksdict's SstFileWriter writing the new keys'
  entries (the shard's delta), and pyarrow writing the batch's rows as Paimon's data file (the ``_KEY_`` and
  system columns, sorted by key, zstd level 1 as pypaimon writes). Their sum beside what the throughput goal
  (half the hand-over's rate) allows a row shows what is left for the engine's own work.

    python tests/benchmarks/bench_spark_floor.py [--rows 10000000] [--repeat 3] [--peer-rows 5000000]
        [--peer-batch 100000] [--part-keys 5000000] [--out DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_upsert  # noqa: E402 - the batch, the spark-submit runner, the peer

ROOT = HERE.parents[1]

PYTHON_TASK_JOB = """import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
rows = spark.range(1, numPartitions=1).mapInArrow(lambda batches: batches, "id long").count()
open(sys.argv[-1], "w").write(json.dumps({"rows": rows}))
"""
DRIVER_ONLY_JOB = """import json, sys
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.table.table import get_table
snapshot = latest_snapshot(get_table({"warehouse": sys.argv[1]}, sys.argv[2]))
open(sys.argv[-1], "w").write(json.dumps({"snapshot_id": snapshot.id}))
"""


def cores() -> int:
    return os.cpu_count() or 1


SECOND_SHUFFLE = "key shuffle, Python workers, a second shuffle to Python workers"


def throughput(spark, path: str, rows: int, repeat: int) -> dict:
    """Seconds (best of ``repeat``) of the key shuffle with and without the hand-over to Python workers, Arrow
    batches cut as the jobs' sessions cut them."""
    from pyspark.sql import functions as F

    from airflow_paimon.spark.job_frame import ARROW_MAX_BYTES, ARROW_MAX_BYTES_DEFAULT

    def pass_on(batches):
        yield from batches

    def count_batches(batches):  # nested: pickled by value
        import pyarrow as pa
        yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})

    shuffled = spark.read.parquet(path).repartition(cores(), "id")
    # the JVM variant hashes every column, or Spark would shuffle only the key (column pruning)
    every_column = F.xxhash64(*shuffled.columns).alias("h")
    variants = {"key shuffle, JVM only": lambda: shuffled.select(every_column).agg(F.bit_xor("h"), F.count("h"))
                .collect()[0][1],
                "key shuffle, then Python workers": lambda: shuffled.mapInArrow(count_batches, "n long")
                .agg(F.sum("n")).collect()[0][0],
                # rows back from Python workers and shuffled again to Python workers, as a table whose buckets take
                # one writer each (a second shuffle by partition and bucket) has its assigned rows
                SECOND_SHUFFLE: lambda: shuffled.mapInArrow(pass_on, shuffled.schema)
                .repartition(cores(), "dt").mapInArrow(count_batches, "n long").agg(F.sum("n")).collect()[0][0]}
    before = spark.conf.get(ARROW_MAX_BYTES, None)
    spark.conf.set(ARROW_MAX_BYTES, ARROW_MAX_BYTES_DEFAULT)
    out = {}
    try:
        for name, run in variants.items():
            best = None
            for _ in range(repeat):
                start = time.perf_counter()
                counted = run()
                seconds = time.perf_counter() - start
                if counted != rows:
                    raise AssertionError(f"{name}: counted {counted} rows, expected {rows}")
                best = seconds if best is None else min(best, seconds)
            out[name] = {"s": round(best, 3), "rows_per_s_per_core": int(rows / best / cores())}
    finally:  # the caller's session as it was
        if before is None:
            spark.conf.unset(ARROW_MAX_BYTES)
        else:
            spark.conf.set(ARROW_MAX_BYTES, before)
    return out


def write_parts(work: Path, keys: int, repeat: int) -> dict:
    """Seconds (best of ``repeat``) and µs per batch row of the libraries' parts of writing a batch of ``keys`` / 2
    rows against an index shard of ``keys`` keys (one of 4 shards of B = 10M into 20M at the default), each on
    one core, the inputs prepared beforehand: only the library calls are timed."""
    from collections import deque

    import pyarrow as pa
    from rocksdict import SstFileWriter

    import bench_index_lookup as lookup
    from airflow_paimon.engine.codec.keys import sort_keys
    from airflow_paimon.engine.codec.system_fields import SEQUENCE_NUMBER, VALUE_KIND, key_column
    from airflow_paimon.engine.index.shard import _sst_options

    batch = keys // 2
    sst = str(work / "parts-shard.sst")
    ids = lookup.make_shard(keys, sst)
    batch_keys, known = lookup.make_batch(ids, batch)
    ordered = sort_keys(batch_keys).keys
    with lookup.fresh_index(sst, str(work)) as probe:  # the new keys and their values, as the delta writes them
        found = probe._db.get(ordered)
    new_keys = [k for k, v in zip(ordered, found) if v is None]
    value = next(v for v in found if v is not None)  # a real entry's size: bucket, time, partition
    rng = np.random.default_rng(3)
    row_ids = np.sort(rng.choice(4 * keys, batch, replace=False))  # a data file is sorted by key
    data = bench_upsert.rows(row_ids, rng.integers(0, bench_upsert.DAYS, batch), rng)
    system = {key_column("id"): data.column("id"), SEQUENCE_NUMBER: pa.array(np.arange(batch, dtype=np.int64)),
              VALUE_KIND: pa.array(np.zeros(batch, dtype=np.int8))}
    data_file_rows = pa.table({**system, **{c: data.column(c) for c in data.column_names}})

    def multi_get():
        with lookup.fresh_index(sst, str(work)) as index:  # a task opens its shard once: a fresh one per run
            return lookup.timed(lambda: [index._db.get(ordered[i:i + lookup.LOOKUP_SLICE])
                                         for i in range(0, len(ordered), lookup.LOOKUP_SLICE)])

    def sst_delta():
        writer = SstFileWriter(options=_sst_options())
        writer.open(str(work / "parts-delta.sst"))
        values = [value] * len(new_keys)
        seconds = lookup.timed(lambda: deque(map(writer.__setitem__, new_keys, values), maxlen=0))
        return seconds + lookup.timed(writer.finish)

    def data_file():
        return lookup.timed(lambda: pq.write_table(data_file_rows, str(work / "parts-data.parquet"),
                                                   compression="zstd", compression_level=1))

    parts = {"index lookups: rocksdict multi-get of the batch's keys": multi_get,
             "index delta: rocksdict SstFileWriter, the new keys": sst_delta,
             "data file: pyarrow parquet of the rows, zstd 1": data_file}
    out = {}
    for name, part in parts.items():
        best = min(part() for _ in range(repeat))
        out[name] = {"s": round(best, 3), "us_per_row": round(best / batch * 1e6, 3)}
    return {"keys": keys, "batch": batch, "known": known, "new": len(new_keys), "parts": out}


def latency(work: Path, repeat: int) -> dict:
    """Wall seconds (best of ``repeat``, after an unmeasured first run) of the two floor spark-submits, each
    mapping the class-data-sharing archive of its kind (the warm-up writes it first when there is none)."""
    warehouse = work / "wh"
    bench_upsert.load_paimon(warehouse, bench_upsert.CROSS, bench_upsert.make_data(1_000, 10)[0])
    jobs = {"PySpark job, one Python task": (PYTHON_TASK_JOB, [], False),
            "driver-only job: pypaimon, latest snapshot": (DRIVER_ONLY_JOB, [str(warehouse), bench_upsert.TABLE], True)}
    out = {}
    for name, (source, args, driver_only) in jobs.items():
        script = work / f"floor_{len(out)}.py"
        script.write_text(source)
        runs = []
        for n in range(repeat + 1):
            result = work / f"floor_{len(out)}_{n}.json"
            cmd = bench_upsert.submit_command(str(script), f"floor-{len(out)}", [*args, str(result)],
                                              driver_only=driver_only)
            runs.append(bench_upsert.run_child(cmd, work / f"floor_{len(out)}_{n}.log", bench_upsert.submit_env()))
            json.loads(result.read_text())  # the job did its work
        measured = runs[1:]  # the first run: the page cache's first read of the archive and the jars
        out[name] = {"wall_s": min(r["wall_s"] for r in measured), "runs_s": [r["wall_s"] for r in runs]}
    out["sum"] = round(sum(v["wall_s"] for v in out.values()), 3)
    return out


def peer(rows: int, batch: int, work: Path, repeat: int, log=print) -> dict:
    """pypaimon-rust's upsert (median of ``repeat``, each on a fresh copy of the loaded table, read back)."""
    r = bench_upsert.bench_size(rows, batch, 4, ("pypaimon-rust",), work, None, log, repeat)
    return {"rows": rows, "batch": batch, "s": r["peers"]["pypaimon-rust"]["s"],
            "runs_s": [run["s"] for run in r["peer_runs"]["pypaimon-rust"]]}


def report(result: dict) -> str:
    meta, lines = result["meta"], []
    lines += [f"# PySpark floors — {meta['date']}", "", f"Machine: {meta['machine']}; load average "
              f"{meta['load_before']} before, {meta['load_after']} after; command `{meta['command']}`.", "",
              f"Throughput, {result['rows']:,} rows, one warm local[2] session, best of {meta['repeat']}:", "",
              "| what | s | rows/s per core |", "|---|---:|---:|"]
    lines += [f"| {k} | {v['s']} | {bench_upsert.fmt_rate(v['rows_per_s_per_core'])} |"
              for k, v in result["throughput"].items()]
    if result.get("write_parts"):
        lines += write_parts_report(result["write_parts"], result["throughput"], meta["repeat"])
    lines += ["", f"Latency, spark-submits with the operators' conf and archive, best of {meta['repeat']} after a "
              "first run:", "", "| what | s | runs |", "|---|---:|---|"]
    lines += [f"| {k} | {v['wall_s']} | {', '.join(map(str, v['runs_s']))} |"
              for k, v in result["latency"].items() if k != "sum"]
    lines.append(f"| **sum: the least a spark-submit-mode DAG run takes** | **{result['latency']['sum']}** | |")
    if result.get("peer"):
        p = result["peer"]
        lines += ["", f"pypaimon-rust's upsert of {p['batch']:,} rows into {p['rows']:,}: {p['s']} s (median; runs "
                  f"{', '.join(map(str, p['runs_s']))}); "
                  f"÷ the floor sum: {round(p['s'] / result['latency']['sum'], 2)}"]
    return "\n".join(lines) + "\n"


def write_parts_report(parts: dict, throughput: dict, repeat: int) -> list[str]:
    hand_over = 1e6 / throughput["key shuffle, then Python workers"]["rows_per_s_per_core"]
    total = hand_over + sum(p["us_per_row"] for p in parts["parts"].values())
    lines = ["", f"The write's parts, each alone on one core, best of {repeat}: a batch of {parts['batch']:,} rows "
             f"({parts['known']:,} keys known, {parts['new']:,} new) against an index shard of {parts['keys']:,} "
             "keys, the inputs prepared beforehand:", "", "| part | s | µs per row |", "|---|---:|---:|",
             f"| the hand-over to Python (above, per core) | | {hand_over:.2f} |"]
    lines += [f"| {name} | {p['s']} | {p['us_per_row']:.2f} |" for name, p in parts["parts"].items()]
    lines += [f"| **sum** | | **{total:.2f}** |", "",
              f"Half the hand-over's rate (issue 40's throughput goal) allows {2 * hand_over:.2f} µs per row: the "
              f"parts leave {2 * hand_over - total:.2f} µs ({(2 * hand_over - total) / (2 * hand_over):.0%}) for the "
              "engine's own work (sorting and checking keys, assigning buckets, building the rows, spilling, "
              "the index values, a second shuffle where the table takes one)."]
    if SECOND_SHUFFLE in throughput:
        second = 1e6 / throughput[SECOND_SHUFFLE]["rows_per_s_per_core"] - hand_over
        lines += ["", f"A table whose buckets take one writer each (one another writer loaded) adds its second "
                  f"shuffle: {second:.2f} µs per row more in the throughput above, so its parts sum to "
                  f"{total + second:.2f} µs, {(total + second) / (2 * hand_over):.0%} of what the goal allows."]
    return lines


def run(rows: int, repeat: int, out: Path, peer_rows: int | None = None, peer_batch: int = 100_000,
        spark=None, work: Path | None = None, log=print, part_keys: int = 0) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    own_work = work is None
    work = work or Path(tempfile.mkdtemp(prefix="bench-floor-"))
    work.mkdir(parents=True, exist_ok=True)
    meta = {"date": datetime.date.today().isoformat(), "machine": bench_upsert.machine(), "repeat": repeat,
            "load_before": bench_upsert.load_average(), "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}
    result = {"meta": meta, "rows": rows}
    try:
        path = str(work / "batch.parquet")
        rng = np.random.default_rng(1)
        pq.write_table(bench_upsert.rows(np.arange(rows), rng.integers(0, bench_upsert.DAYS, rows), rng), path)
        spark = spark or bench_upsert.make_spark()
        result["throughput"] = throughput(spark, path, rows, repeat)
        log(f"throughput: {result['throughput']}")
        if part_keys:
            result["write_parts"] = write_parts(work, part_keys, repeat)
            log(f"write parts: {result['write_parts']}")
        result["latency"] = latency(work, repeat)
        log(f"latency: {result['latency']}")
        if peer_rows:
            result["peer"] = peer(peer_rows, peer_batch, work / "peer", repeat, log)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = bench_upsert.load_average()
    (out / "spark_floor.json").write_text(json.dumps(result, indent=2))
    (out / "spark_floor.md").write_text(report(result))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the throughput floor")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer-rows", type=int, default=None, help="pypaimon-rust's table size (none: no peer)")
    parser.add_argument("--peer-batch", type=int, default=100_000)
    parser.add_argument("--part-keys", type=int, default=5_000_000,
                        help="index shard size of the write's parts, its batch half as many rows (0: not measured)")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "benchmarks" / "results" /
                        datetime.date.today().isoformat() / "spark_floor")
    args = parser.parse_args()
    run(args.rows, args.repeat, args.out, args.peer_rows, args.peer_batch, part_keys=args.part_keys)
    print((args.out / "spark_floor.md").read_text())


if __name__ == "__main__":
    main()
