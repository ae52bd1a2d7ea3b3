"""Benchmark: cold (rebuild), warm (reuse) and catch-up bootstrap of the global index, in-job (the Spark
job's function in a local[2] session, no spark-submit), on a cross-partition table of M rows over 30 date
partitions written by pypaimon-rust's native writer.

    python tests/benchmarks/bench_bootstrap.py --rows 1000000 5000000 [--shards 4] [--repeat 1] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SPEC = {"columns": [["id", "BIGINT"], ["dt", "DATE"], ["customer", "STRING"], ["amount", "DOUBLE"]],
        "primary_keys": ["id"], "partition_keys": ["dt"],
        "options": {"bucket": "-1", "write.native.enabled": "true"}}


def batch(ids: np.ndarray, rng) -> pa.Table:
    days = np.datetime64("2026-10-01") + rng.integers(0, 30, len(ids)).astype("timedelta64[D]")
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": pa.array(days.astype("datetime64[D]")),
                     "customer": pa.array(rng.integers(0, 10_000, len(ids)).astype(str)),
                     "amount": pa.array(rng.random(len(ids)) * 100)})


def native_write(table, data: pa.Table) -> float:
    start = time.perf_counter()
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(data)
    builder.new_commit().commit(write.prepare_commit())
    write.close()
    return time.perf_counter() - start


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run(rows: int, shards: int, spark, repeat: int = 1) -> dict:
    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
    from bench_upsert import PeakRSS, load_average
    from spark.jobs import pipeline_on

    from airflow_paimon.engine.files.layout import PROVIDER_DIR

    warehouse = tempfile.mkdtemp(prefix="bench-bootstrap-")
    try:
        table = get_or_create_table({"warehouse": warehouse}, "db.t", TableSpec.from_dict(SPEC))
        rng = np.random.default_rng(1)
        write_s = native_write(table, batch(np.arange(rows), rng))
        jobs = pipeline_on(spark, warehouse, "db.t", shards=shards)
        colds = []
        for _ in range(repeat):  # each cold run from no index at all
            shutil.rmtree(Path(warehouse) / PROVIDER_DIR, ignore_errors=True)
            load = load_average()
            with PeakRSS(os.getpid()) as rss:
                cold_s, cold = timed(jobs.bootstrap)
            assert cold["index_decision"] == "rebuilt" and cold["keys"] == rows
            colds.append({"s": round(cold_s, 2), "rss_mib": rss.mib, "load_average": load})
        warm_s, warm = timed(jobs.bootstrap)
        half = min(50_000, rows // 2)
        upsert = np.concatenate([rng.choice(rows, half, replace=False), np.arange(rows, rows + half)])
        native_write(table, batch(upsert, rng))
        catch_s, caught = timed(jobs.bootstrap)
        assert (warm["index_decision"], caught["index_decision"]) == ("reused", "caught_up")
        assert caught["keys"] == rows + half
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    median = sorted(colds, key=lambda c: c["s"])[(len(colds) - 1) // 2]
    return {"rows": rows, "shards": shards, "native_initial_write_s": round(write_s, 2),
            "cold_bootstrap_s": median["s"], "cold_keys_per_s": int(rows / median["s"]),
            "cold_keys_per_s_per_core": int(rows / median["s"] / (os.cpu_count() or 1)),
            "cold_peak_rss_mib": median["rss_mib"], "cold_runs": colds,
            "cold_files_read": cold["data_files_read"], "warm_bootstrap_s": round(warm_s, 3),
            "warm_files_read": warm["data_files_read"], "catch_up_100k_s": round(catch_s, 2),
            "catch_up_files_read": caught["data_files_read"]}


def _warm(batches):
    import airflow_paimon.engine.index.bootstrap  # noqa: F401

    yield from batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="cold bootstraps per size (the median is reported)")
    parser.add_argument("--out", default=None, help="directory for bootstrap.json")
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.pyspark.python", sys.executable)
             .config("spark.sql.shuffle.partitions", str(args.shards))
             .config("spark.ui.enabled", "false").getOrCreate())
    # JVM and Python workers warm (engine imported), so the first size measured pays no start-up either
    spark.range(4, numPartitions=2).mapInArrow(_warm, "id long").collect()
    results = [run(m, args.shards, spark, args.repeat) for m in args.rows]
    for r in results:
        print(json.dumps(r))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "bootstrap.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
