"""Benchmark: batch size. Backfills and first loads are 10M–100M rows in one run, not a daily 100k: the upsert of
B rows into the same M-row cross-partition table for several B (bench_upsert's table and batches: half updates,
a tenth of them moving partition, half new keys), ours in-job and end to end (each task a spark-submit as the
operators submit it; peak RSS per task), pypaimon-rust beside it; then a first load of L rows into an empty table
through the operators' jobs (spark-submits). Rates are rows/s per core (this machine's cores). Every upsert is
checked by reading the table back (bench_upsert.verify), the first load by its row count and distinct keys.

    python tests/benchmarks/bench_batch_size.py [--rows 20000000] [--batches 100000 1000000 10000000]
        [--first-load 50000000] [--peers ours ours-e2e pypaimon-rust] [--out DIR]
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
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_upsert  # noqa: E402 - the table, its batches, the runners and the peers

ROOT = HERE.parents[1]
PEERS = ("ours", "ours-e2e", "pypaimon-rust")
CHUNK = 5_000_000  # rows per generated parquet file of a first load (bounds the generator's memory)


def cores() -> int:
    return os.cpu_count() or 1


def first_load(rows: int, work: Path, shards: int, log=print) -> dict:
    """``rows`` new keys into an empty table, through the jobs as the operators submit them: bootstrap (a new
    table), assign-and-write of a directory of parquet files, commit. Checked: row count and distinct keys."""
    source = work / "first-load"
    source.mkdir(parents=True)
    rng = np.random.default_rng(7)
    start = time.perf_counter()
    for i, lo in enumerate(range(0, rows, CHUNK)):
        ids = np.arange(lo, min(rows, lo + CHUNK))
        pq.write_table(bench_upsert.rows(ids, rng.integers(0, bench_upsert.DAYS, len(ids)), rng),
                       source / f"part-{i:03d}.parquet")
    made = time.perf_counter() - start
    warehouse = work / "wh-first-load"
    run, pipeline, done = bench_upsert.e2e_runner(work), bench_upsert.ours(warehouse, shards), {}
    load = {"load_average": bench_upsert.load_average()}
    for job in ("bootstrap_index", "assign_and_write", "commit"):
        load[job], done[job] = run(job, pipeline.spec(job, done, str(source), "first-load"))
    written, committed = done["assign_and_write"], done["commit"]
    load["total_s"] = round(sum(load[s]["wall_s"] for s in ("bootstrap_index", "assign_and_write", "commit")), 3)
    ids = bench_upsert.read_paimon(warehouse).column("id")
    keys = pc.count_distinct(ids).as_py()
    if len(ids) != rows or keys != rows:
        raise AssertionError(f"first load: {len(ids)} rows, {keys} keys, expected {rows} of each")
    load.update(rows=rows, make_data_s=round(made, 2), files=written["files"], snapshot_id=committed["snapshot_id"],
                rows_per_s_per_core=int(rows / load["assign_and_write"]["wall_s"] / cores()))
    log(f"first load of {rows:,} rows: {load}")
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.rmtree(source, ignore_errors=True)
    return load


def summarise(r: dict) -> dict:
    """Per batch size: ours' assign-and-write rate per core, in-job and end to end; the peers' upsert times."""
    b, ij, e2e = r["batch"], r["ours_in_job"], r["ours_e2e"]
    s = {"batch": b, "load_average": r["load_average"]}
    if ij:
        s["in_job_write_s"] = ij["assign_and_write"]["s"]
        s["in_job_upsert_s"] = r["derived"]["ours_upsert_in_job_s"]
        s["in_job_write_rows_per_s_per_core"] = int(b / ij["assign_and_write"]["s"] / cores())
        s["in_job_write_rss_mib"] = ij["assign_and_write"]["rss_mib"]
    if e2e:
        s["e2e_upsert_s"] = r["derived"]["ours_upsert_e2e_s"]
        s["e2e_write_rows_per_s_per_core"] = int(b / e2e["assign_and_write"]["wall_s"] / cores())
        s["e2e_task_rss_mib"] = bench_upsert.task_rss(r)
        s["e2e_task_pss_mib"] = bench_upsert.task_rss(r, "pss_mib")
    s["peers_s"] = {name: m["s"] for name, m in r["peers"].items()}
    return s


def linearity(rows: list[dict], key: str) -> dict | None:
    """Seconds per row at the largest B over seconds per row at the smallest (1.0: linear; the goal ≤ 1)."""
    points = [(r["batch"], r[key]) for r in rows if r.get(key)]
    if len(points) < 2:
        return None
    (b0, t0), (b1, t1) = points[0], points[-1]
    return {"from": b0, "to": b1, "per_row_ratio": round((t1 / b1) / (t0 / b0), 2)}


def report(meta: dict, rows: list[dict], load: dict | None) -> str:
    lines = [f"# Batch size — {meta['date']}", "", f"Machine: {meta['machine']}; load average {meta['load_before']} "
             f"before, {meta['load_after']} after. Table M = {meta['rows']:,} rows; command `{meta['command']}`.", "",
             "| B | ours in-job: write | per core | upsert | ours end to end: upsert | per core (write) | peak RSS "
             "per task (MiB) | peak PSS per task (MiB) | pypaimon-rust |",
             "|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    for s in rows:
        rss, pss = (", ".join(f"{k.replace('_', ' ')} {v:,.0f}" for k, v in s.get(key, {}).items())
                    for key in ("e2e_task_rss_mib", "e2e_task_pss_mib"))
        peer = s["peers_s"].get("pypaimon-rust")
        lines.append(f"| {s['batch']:,} | {s.get('in_job_write_s', '–')} s | "
                     f"{bench_upsert.fmt_rate(s.get('in_job_write_rows_per_s_per_core', 0))} rows/s | "
                     f"{s.get('in_job_upsert_s', '–')} s | {s.get('e2e_upsert_s', '–')} s | "
                     f"{bench_upsert.fmt_rate(s.get('e2e_write_rows_per_s_per_core', 0))} rows/s | {rss or '–'} | "
                     f"{pss or '–'} | "
                     f"{f'{peer} s' if peer else 'not run'} |")
    for key, label in (("in_job_write_s", "in-job assign-and-write"), ("e2e_upsert_s", "end-to-end upsert")):
        lin = linearity(rows, key)
        if lin:
            lines.append(f"\nLinearity, {label}: seconds per row at B = {lin['to']:,} ÷ at B = {lin['from']:,} = "
                         f"{lin['per_row_ratio']} (goal ≤ 1: no worse than linear)")
    if load:
        rss, pss = (", ".join(f"{s.replace('_', ' ')} {load[s][key]:,.0f}" for s in
                              ("bootstrap_index", "assign_and_write", "commit")) for key in ("rss_mib", "pss_mib"))
        lines += ["", f"First load of {load['rows']:,} rows into an empty table (spark-submits, as the operators): "
                  f"{load['total_s']} s (bootstrap {load['bootstrap_index']['wall_s']} s, assign-and-write "
                  f"{load['assign_and_write']['wall_s']} s, commit {load['commit']['wall_s']} s), "
                  f"{bench_upsert.fmt_rate(load['rows_per_s_per_core'])} rows/s per core through assign-and-write, "
                  f"{load['files']} files; peak RSS per task (MiB): {rss}; peak PSS per task (MiB): {pss}; "
                  f"load average {load['load_average']}."]
    lines += ["", *[f"- {n}" for n in meta["notes"]]]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> str | None:
    try:
        import matplotlib
    except ImportError:
        return "plot skipped: matplotlib is not installed (uv sync --group bench)"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for key, label in (("in_job_write_s", "ours in-job: assign-and-write"), ("in_job_upsert_s", "ours in-job: upsert"),
                       ("e2e_upsert_s", "ours end to end: upsert (spark-submits)")):
        points = [(s["batch"], s[key]) for s in rows if s.get(key)]
        if points:
            ax.plot(*zip(*points), marker="o", label=label)
    points = [(s["batch"], s["peers_s"]["pypaimon-rust"]) for s in rows if "pypaimon-rust" in s["peers_s"]]
    if points:
        ax.plot(*zip(*points), marker="o", label="pypaimon-rust upsert")
    b0 = rows[0]
    if b0.get("in_job_write_s"):  # the linear reference through the smallest B
        xs = [s["batch"] for s in rows]
        ax.plot(xs, [b0["in_job_write_s"] * x / b0["batch"] for x in xs], "k:", label="linear from the smallest B")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size B (rows)")
    ax.set_ylabel("seconds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def run(m: int, batches: list[int], first: int | None, out: Path, peers: tuple = PEERS, shards: int = 4,
        spark=None, work: Path | None = None, log=print, warm: bool = True) -> dict:
    """``warm``: our steps once on a tiny table first, unmeasured (off: a smoke run, whose rates mean nothing)."""
    out.mkdir(parents=True, exist_ok=True)
    own_work = work is None
    work = work or Path(tempfile.mkdtemp(prefix="bench-batch-"))
    meta = {"date": datetime.date.today().isoformat(), "machine": bench_upsert.machine(), "rows": m,
            "load_before": bench_upsert.load_average(), "notes": [],
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}
    spark = spark or (bench_upsert.make_spark() if "ours" in peers else None)
    try:
        if "ours" in peers and warm:
            bench_upsert.warm_up(spark, shards, work / "warm-up", log)
        rows = []
        for b in batches:
            r = bench_upsert.bench_size(m, b, shards, peers, work / f"b{b}", spark, log)
            rows.append({**summarise(r), "raw": r})
            shutil.rmtree(work / f"b{b}", ignore_errors=True)
        load = first_load(first, work, shards, log) if first else None
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = bench_upsert.load_average()
    note = plot(rows, out / "batch_size.png")
    if note:
        meta["notes"].append(note)
    meta["notes"].append("in-job: the jobs' functions in one warm local[2] session (no spark-submit); end to end: "
                         "each task a spark-submit with the operators' conf (its class-data-sharing archive "
                         "included); one run per B")
    result = {"meta": meta, "batches": [{k: v for k, v in s.items() if k != "raw"} for s in rows],
              "first_load": load, "raw": [s["raw"] for s in rows]}
    (out / "batch_size.json").write_text(json.dumps(result, indent=2, default=str))
    (out / "batch_size.md").write_text(report(meta, result["batches"], load))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000_000, help="table size M")
    parser.add_argument("--batches", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--first-load", type=int, default=50_000_000, help="rows of the first load (0: none)")
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=bench_upsert.PEERS)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "benchmarks" / "results" /
                        datetime.date.today().isoformat())
    args = parser.parse_args()
    run(args.rows, args.batches, args.first_load or None, args.out, tuple(args.peers), args.shards)
    print((args.out / "batch_size.md").read_text())


if __name__ == "__main__":
    main()
