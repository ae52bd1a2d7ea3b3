"""Benchmark (not a test): a table's long life — many small scheduled runs, each bootstrap-index (warm) ->
assign-and-write -> commit, a compaction every N runs as the example DAG's compact task does it
(``every_n_runs``), snapshot expiry every N runs as a maintenance DAG does it. Per commit: the seconds of each
step, the snapshot's manifest count (base + delta), manifest files on disk, and every 10 commits the time
pypaimon takes to plan a full scan. Run with Paimon's manifest compaction (the commit's default) and without
it (``manifest.merge-min-count`` and the full-compaction threshold out of reach: pypaimon's own behaviour).

The jobs' engine orchestrations run in-process (engine/runs/bootstrap_index.py, engine/runs/assign_and_write.py,
engine/runs/commit.py, engine/runs/compact.py through tests/local_runner.py; engine/maintenance/expire.py), so this
measures the engine's metadata work, not Spark or spark-submit. After the last commit the table is read back with
pypaimon and compared with a pandas oracle (row count, no key twice, every value); a wrong run reports nothing.

    python3 -m uv run --frozen --group bench python tests/benchmarks/bench_long_life.py [--commits 500]
        [--rows 300000] [--batch 1000] [--compact-every 10] [--expire-every 10] [--modes merge no-merge]
"""
from __future__ import annotations

import argparse
import datetime
import functools
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
from bench_upsert import COLUMNS, DAYS, rows  # noqa: E402 - the upsert benchmark's table and row generator

from airflow_paimon.engine.maintenance.expire import expire_snapshots  # noqa: E402

from airflow_paimon.engine.options import TableOptions  # noqa: E402
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table  # noqa: E402
from local_runner import bootstrap, compact, in_process, stage_run  # noqa: E402

TABLE = "db.t"
OUT = ROOT / "tests" / "benchmarks" / "results"
MODES = {"merge": {},  # Paimon's defaults: merge-min-count 30, full compaction past 16 MB
         "no-merge": {"manifest.merge-min-count": str(2**31 - 1),
                      "manifest.full-compaction-threshold-size": "1 tb"}}
STEPS = ("bootstrap_s", "write_s", "commit_s")
WINDOW = 10  # commits per window for the steady-state comparison (first window vs last window, medians)
SPAN = 50  # commits per span for the trend (mean of the first SPAN vs mean of the last SPAN)


def table_spec(mode: str) -> TableSpec:
    return TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                                "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "200000",
                                            **MODES[mode]}})


def batch_of(rng, next_id: int, size: int, days: np.ndarray) -> tuple[pa.Table, int]:
    """Half updates of existing keys (10 % of them move to another day), half new keys; ``days`` (day of
    every key) kept up to date."""
    updates = rng.choice(next_id, size // 2, replace=False)
    upd_days = days[updates].copy()
    moved = len(updates) // 10
    upd_days[:moved] = (upd_days[:moved] + rng.integers(1, DAYS, moved)) % DAYS
    new = np.arange(next_id, next_id + size - len(updates))
    ids = np.concatenate([updates, new])
    days[ids] = np.concatenate([upd_days, rng.integers(0, DAYS, len(new))])
    return rows(ids, days[ids], rng), next_id + len(new)


def manifest_counts(table, snapshot) -> tuple[int, int]:
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    lists = ManifestListManager(table)
    return len(lists.read_base(snapshot)), len(lists.read_delta(snapshot))


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return round(time.perf_counter() - start, 4), result


def plan_seconds(table) -> tuple[float, int]:
    """pypaimon planning a full scan of the latest snapshot (reads every manifest the snapshot lists)."""
    seconds, splits = timed(lambda: table.new_read_builder().new_scan().plan().splits())
    return seconds, len(splits)


def run_mode(mode: str, args, work: Path, log=print) -> dict:
    opts, index_root = {"warehouse": str(work / "warehouse")}, str(work / "index")
    spec = table_spec(mode)
    get_or_create_table(opts, TABLE, spec)
    rng = np.random.default_rng(args.seed)
    days = rng.integers(0, DAYS, args.rows + args.commits * args.batch)
    base = rows(np.arange(args.rows), days[:args.rows], rng)
    load_s, _ = timed(lambda: commit_run(opts, index_root, base, "load"))
    log(f"[{mode}] loaded {args.rows:,} rows in {load_s:.1f} s")
    frames, next_id, records = [base.to_pandas()], args.rows, []
    start = time.perf_counter()
    for i in range(1, args.commits + 1):
        batch, next_id = batch_of(rng, next_id, args.batch, days)
        frames.append(batch.to_pandas())
        rec = {"commit": i, **commit_run(opts, index_root, batch, f"run-{i}")}
        table = get_table(opts, TABLE)
        if i % args.compact_every == 0:  # the DAG's compact task: the buckets written since the last one
            rec["compact_s"], result = timed(functools.partial(compact, table, run_id=f"run-{i}",
                                                               snapshot_id=rec["snapshot_id"]))
            rec["compacted_buckets"] = result["compacted_buckets"]
        if i % args.expire_every == 0:  # a maintenance DAG: Paimon's retention, ages not waited for
            rec["expire_s"], result = timed(lambda: expire_snapshots(get_table(opts, TABLE), TableOptions.parse(
                TABLE, {"snapshot.num-retained.min": str(args.retain), "snapshot.time-retained": "0 ms"}).expire))
            rec["expired_snapshots"] = result.expired_snapshots
        table = get_table(opts, TABLE)
        snapshot = table.snapshot_manager().get_latest_snapshot()
        rec["base_manifests"], rec["delta_manifests"] = manifest_counts(table, snapshot)
        rec["manifest_files_on_disk"] = len(os.listdir(f"{table.table_path.rstrip('/')}/manifest"))
        if i % 10 == 0 or i == 1:
            rec["plan_s"], rec["splits"] = plan_seconds(table)
        records.append(rec)
        if i % 50 == 0 or i == args.commits:
            log(f"[{mode}] commit {i}: " + ", ".join(f"{k}={rec[k]}" for k in (*STEPS, "base_manifests",
                                                                               "manifest_files_on_disk"))
                + f" ({time.perf_counter() - start:.0f} s)")
    verify(get_table(opts, TABLE), frames)
    return {"mode": mode, "options": MODES[mode], "load_s": load_s, "run_s": round(time.perf_counter() - start, 1),
            "commits": records, "summary": summarise(records)}


def commit_run(opts, index_root: str, batch: pa.Table, run_id: str) -> dict:
    """One scheduled run's write tasks: warm bootstrap-index, assign-and-write, commit; each timed."""
    bootstrap_s, run = timed(lambda: bootstrap(opts, TABLE, index_root, 2))
    write_s, commit_spec = timed(lambda: stage_run(run, batch, run_id))
    commit_s, result = timed(lambda: in_process("commit", commit_spec))
    return {"bootstrap_s": bootstrap_s, "index_decision": run.result.index_decision, "write_s": write_s,
            "commit_s": commit_s, "snapshot_id": result.snapshot_id}


def verify(table, frames: list[pd.DataFrame]) -> None:
    """The table equals the oracle (last row per id over the load and every batch), no key twice."""
    rb = table.new_read_builder()
    actual = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pandas()
    expected = pd.concat(frames, ignore_index=True).drop_duplicates("id", keep="last")
    if actual["id"].duplicated().any():
        raise AssertionError("a key appears twice")
    cols = ["id", "dt", "customer", "amount", "qty"]
    actual = actual[cols].sort_values("id").reset_index(drop=True)
    expected = expected[cols].sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)


def window(records: list[dict], key: str, first: int) -> float | None:
    values = [r[key] for r in records[first:first + WINDOW] if key in r]
    return round(statistics.median(values), 4) if values else None


def summarise(records: list[dict]) -> dict:
    """Commit 10 and the last commit, as raw values and as medians of the windows around them (commits 6-15
    and the last 10; one commit's time on a shared machine is noise)."""
    n = len(records)
    total = [dict(r, total_s=round(sum(r[s] for s in STEPS), 4)) for r in records]
    early, late = min(5, max(n - WINDOW, 0)), max(n - WINDOW, 0)
    out = {}
    for key in (*STEPS, "total_s"):
        a, b = window(total, key, early), window(total, key, late)
        first, last = (round(statistics.mean(r[key] for r in part), 4) for part in (total[:SPAN], total[-SPAN:]))
        out[key] = {"window_first": a, "window_last": b, "ratio": round(b / a, 2) if a and b else None,
                    "commit_10": total[min(9, n - 1)][key], "commit_last": total[-1][key],
                    "mean_first": first, "mean_last": last, "mean_ratio": round(last / first, 2) if first else None}
    plans = [r for r in records if "plan_s" in r]
    out["plan_s"] = {"first": plans[0]["plan_s"], "last": plans[-1]["plan_s"],
                     "max_first_100": max(r["plan_s"] for r in plans if r["commit"] <= 100),
                     "max_last_100": max(r["plan_s"] for r in plans if r["commit"] > n - 100)} if plans else None
    out["manifests_max"] = max(r["base_manifests"] + r["delta_manifests"] for r in records)
    out["manifests_last"] = records[-1]["base_manifests"] + records[-1]["delta_manifests"]
    out["manifest_files_on_disk_last"] = records[-1]["manifest_files_on_disk"]
    return out


def report(results: list[dict], meta: dict) -> str:
    lines = [f"# Long life: {meta['commits']} small commits", "",
             f"{meta['date']}, {meta['machine']}; table of {meta['rows']:,} rows (cross-partition, {DAYS} days), "
             f"{meta['commits']} upserts of {meta['batch']:,} rows (half updates, 10 % of them moving, half new), "
             f"compaction every {meta['compact_every']} commits, expiry every {meta['expire_every']} "
             f"(retain {meta['retain']} snapshots); engine in-process; load average {meta['load']}.", "",
             f"Commit 10 against the last commit: medians of commits 6-15 and of the last {WINDOW} (one commit's "
             f"time is noise on a shared machine), and means of the first and the last {SPAN} commits.", "",
             "| mode | step | commits 6-15 (s) | last 10 (s) | ratio | first 50, mean (s) | last 50, mean (s) | ratio "
             "| commit 10 (s) | last commit (s) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for key in (*STEPS, "total_s"):
            s = r["summary"][key]
            lines.append(f"| {r['mode']} | {key[:-2]} | {s['window_first']} | {s['window_last']} | {s['ratio']} "
                         f"| {s['mean_first']} | {s['mean_last']} | {s['mean_ratio']} "
                         f"| {s['commit_10']} | {s['commit_last']} |")
    lines += ["", "| mode | manifests listed (base + delta), max / last | manifest files on disk, last | "
              "pypaimon plan of a full scan, max over the first / last 100 commits (s) | run time (s) |",
              "|---|---:|---:|---:|---:|"]
    for r in results:
        s = r["summary"]
        plan = s["plan_s"]
        lines.append(f"| {r['mode']} | {s['manifests_max']} / {s['manifests_last']} | "
                     f"{s['manifest_files_on_disk_last']} | {plan['max_first_100']} / {plan['max_last_100']} | "
                     f"{r['run_s']} |")
    return "\n".join(lines) + "\n"


def plot(results: list[dict], path: Path) -> str | None:
    try:
        import matplotlib
    except ImportError:
        return "plot skipped: matplotlib is not installed (uv sync --group bench)"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, mx) = plt.subplots(2, 1, figsize=(9, 7), sharex=True, height_ratios=[3, 2])
    for r, style in zip(results, ("-", "--")):
        x = [c["commit"] for c in r["commits"]]
        for key in STEPS:
            y = pd.Series([c[key] for c in r["commits"]]).rolling(WINDOW, min_periods=1).median()
            ax.plot(x, y, style, label=f"{r['mode']}: {key[:-2]}")
        plans = [c for c in r["commits"] if "plan_s" in c]
        ax.plot([c["commit"] for c in plans], [c["plan_s"] for c in plans], style, marker=".",
                label=f"{r['mode']}: pypaimon plan")
        mx.plot(x, [c["base_manifests"] + c["delta_manifests"] for c in r["commits"]], style,
                label=f"{r['mode']}: manifests listed")
        mx.plot(x, [c["manifest_files_on_disk"] for c in r["commits"]], style, alpha=0.5,
                label=f"{r['mode']}: manifest files on disk")
    ax.set_ylabel(f"seconds (rolling median of {WINDOW})")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    mx.set_xlabel("commit")
    mx.set_ylabel("manifests")
    mx.set_yscale("log")
    mx.grid(alpha=0.3)
    mx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--rows", type=int, default=300_000, help="rows loaded before the first commit")
    parser.add_argument("--batch", type=int, default=1_000, help="rows per commit")
    parser.add_argument("--compact-every", type=int, default=10, help="compaction every N commits")
    parser.add_argument("--expire-every", type=int, default=10, help="snapshot expiry every N commits")
    parser.add_argument("--retain", type=int, default=10, help="snapshot.num-retained.min of the expiry")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT, help="directory of long_life.{json,md,png}")
    parser.add_argument("--name", default="long_life", help="file name stem of the results")
    parser.add_argument("--from-json", type=Path, help="only rewrite the report and plot of an earlier run")
    args = parser.parse_args()
    if args.from_json:
        done = json.loads(args.from_json.read_text())
        write_results(done["results"], done["meta"], args.out, args.name)
        return
    logging.basicConfig(level=logging.WARNING)
    from bench_upsert import machine

    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "commits": args.commits,
            "rows": args.rows, "batch": args.batch, "compact_every": args.compact_every,
            "expire_every": args.expire_every, "retain": args.retain,
            "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    results = []
    for mode in args.modes:
        work = Path(tempfile.mkdtemp(prefix=f"bench-long-life-{mode}-"))
        try:
            results.append(run_mode(mode, args, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    write_results(results, meta, args.out, args.name)


def write_results(results: list[dict], meta: dict, out: Path, name: str) -> None:
    for r in results:
        r["summary"] = summarise(r["commits"])
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    md = report(results, meta)
    note = plot(results, out / f"{name}.png")
    (out / f"{name}.md").write_text(md + (f"\n{note}\n" if note else f"\n![time vs commit]({name}.png)\n"))
    print(md)
    print(f"written to {out}/{name}.*", file=sys.stderr)


if __name__ == "__main__":
    main()
