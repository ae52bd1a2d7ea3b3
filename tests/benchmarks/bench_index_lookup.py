"""Benchmark: the global key index's lookup floor — what RocksDB (through rocksdict) costs per key, beside
what Spark costs per row to hand rows to a Python worker.

One index shard of K keys is written as our shard files are (engine/index/shard.py write_sst: sorted, LZ4,
bloom filter) and loaded as a task loads it (ingested into a fresh local RocksDB, mapped reads). A batch of B keys,
half of them in the shard (updates), half new, as bench_upsert's batches, is then looked up:

- ours: ``ShardIndex.lookup`` as the assigner calls it (keys sorted, a get per key, values back as Arrow);
- the bare rocksdict calls on the same sorted keys: a get loop over the known keys only and over the new keys only,
  rocksdict's multi-get (a list per call), and one full scan of the shard (items), the merge-join alternative;
- each measurement on a freshly loaded shard (a task opens its shard once), the median of --repeat runs.

Beside it, the hand-over floor of bench_spark_floor.py (10M rows shuffled by key and handed to Python workers that
only count them; its newest recorded result, or --floor-json), and what the throughput goal leaves per row: at
half the floor's rate a row may take 2 / floor rate in all, so everything but the hand-over — the lookups among
it — gets 1 / floor rate.

    python tests/benchmarks/bench_index_lookup.py [--keys 5000000] [--batch 2500000] [--repeat 3] [--out DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from airflow_paimon.engine.codec.keys import encode_keys, encode_partitions, sort_keys  # noqa: E402
from airflow_paimon.engine.index.shard import ShardIndex, encode_values, write_sst  # noqa: E402

RESULTS = ROOT / "tests" / "benchmarks" / "results"
LOOKUP_SLICE = 1 << 16  # keys per multi-get call, as ShardIndex.lookup slices its gets


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def make_shard(keys: int, path: str, seed: int = 7) -> np.ndarray:
    """An SST of ``keys`` keys (int64 ids, 30 date partitions, 4 buckets) written as our shard files are; returns
    the ids."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(4 * keys, size=keys, replace=False).astype(np.int64)
    days = pa.array([f"2026-01-{d:02d}" for d in range(1, 31)]).take(pa.array(rng.integers(0, 30, keys)))
    values = encode_values(rng.integers(0, 4, keys), encode_partitions(pa.table({"dt": days}), ["dt"]))
    write_sst(encode_keys(pa.table({"id": ids}), ["id"]), values, path)
    return ids


def make_batch(ids: np.ndarray, batch: int, seed: int = 8) -> tuple[pa.Array, int]:
    """``batch`` encoded keys, half of them from ``ids`` and half new, shuffled; and how many are known."""
    rng = np.random.default_rng(seed)
    known = rng.choice(ids, size=batch // 2, replace=False)
    taken = np.zeros(4 * len(ids), dtype=bool)
    taken[ids] = True
    new = rng.choice(np.nonzero(~taken)[0], size=batch - len(known), replace=False).astype(np.int64)
    keys = rng.permutation(np.concatenate([known, new]))
    return encode_keys(pa.table({"id": keys}), ["id"]), len(known)


def fresh_index(sst: str, workdir: str) -> ShardIndex:
    """The shard loaded as a task loads it: a linked copy ingested into a new local RocksDB."""
    index = ShardIndex(workdir)
    copy = os.path.join(workdir, f"in-{time.monotonic_ns()}.sst")
    os.link(sst, copy)
    index.ingest([copy], move=True)
    return index


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def measure(sst: str, keys: pa.Array, workdir: str, repeat: int) -> dict:
    """Seconds per way of looking the keys up, median of ``repeat`` runs on a freshly loaded shard each."""
    ordered = sort_keys(keys).keys
    probe = fresh_index(sst, workdir)
    get = probe._db.get
    values = [get(k) for k in ordered]
    known = [k for k, v in zip(ordered, values) if v is not None]
    new = [k for k, v in zip(ordered, values) if v is None]
    probe.close()
    ways = {
        "ours: ShardIndex.lookup (sort, gets, Arrow values)": lambda ix: ix.lookup(keys),
        "get loop, known keys": lambda ix: [ix._db.get(k) for k in known],
        "get loop, new keys": lambda ix: [ix._db.get(k) for k in new],
        "multi-get, every key": lambda ix: [ix._db.get(ordered[i:i + LOOKUP_SLICE])
                                            for i in range(0, len(ordered), LOOKUP_SLICE)],
        "full scan of the shard (items)": lambda ix: sum(1 for _ in ix._db.items()),
    }
    runs: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeat):
        for name, way in ways.items():
            with fresh_index(sst, workdir) as index:
                runs[name].append(timed(way, index))
    return {"known": len(known), "new": len(new), "runs_s": runs,
            "s": {name: statistics.median(r) for name, r in runs.items()}}


def newest_floor(path: str | None) -> tuple[dict | None, str | None]:
    """bench_spark_floor.py's recorded result: ``path``, else the newest under results/."""
    candidates = [Path(path)] if path else sorted(RESULTS.glob("*/spark_floor*/spark_floor.json"))
    if not candidates or not candidates[-1].exists():
        return None, None
    return json.loads(candidates[-1].read_text()), str(candidates[-1].relative_to(ROOT) if not path else path)


def summarize(keys: int, batch: int, m: dict, floor: dict | None, floor_path: str | None) -> dict:
    s = m["s"]
    per_key = {name: s[name] / batch * 1e6 for name in s}
    per_key["get loop, known keys"] = s["get loop, known keys"] / m["known"] * 1e6
    per_key["get loop, new keys"] = s["get loop, new keys"] / m["new"] * 1e6
    per_key["full scan of the shard (items)"] = s["full scan of the shard (items)"] / batch * 1e6
    summary = {"keys": keys, "batch": batch, "known": m["known"], "new": m["new"], "us_per_batch_key": per_key,
               "us_per_shard_key_scanned": s["full scan of the shard (items)"] / keys * 1e6}
    if floor:
        rate = floor["throughput"]["key shuffle, then Python workers"]["rows_per_s_per_core"]
        hand_over = 1e6 / rate
        ours = per_key["ours: ShardIndex.lookup (sort, gets, Arrow values)"]
        summary["floor"] = {"source": floor_path, "date": floor["meta"]["date"], "rows_per_s_per_core": rate,
                            "hand_over_us_per_row": hand_over, "goal_us_per_row": 2 * hand_over,
                            "left_after_hand_over_us": hand_over,
                            "lookup_share_of_what_is_left": ours / hand_over}
    return summary


def report(meta: dict, summary: dict, m: dict) -> str:
    lines = [f"# Index lookup floor — {meta['date']}", "",
             f"Machine: {meta['machine']}. Load average before / after: {meta['load_before']} / {meta['load_after']}.",
             f"Command: `{meta['command']}`", "",
             f"One shard of {summary['keys']:,} keys (our SST format, loaded as a task loads it); a batch of "
             f"{summary['batch']:,} keys, {summary['known']:,} known and {summary['new']:,} new. Median of "
             f"{meta['repeat']} runs, each on a freshly loaded shard.", "",
             "| way | s | µs per key |", "|---|---:|---:|"]
    per_key = summary["us_per_batch_key"]
    for name, s in m["s"].items():
        unit = {"get loop, known keys": "per known key", "get loop, new keys": "per new key"}.get(name, "per batch key")
        lines.append(f"| {name} | {s:.3f} | {per_key[name]:.2f} ({unit}) |")
    scanned = summary["us_per_shard_key_scanned"]
    lines += ["", f"The full scan reads every shard key: {scanned:.2f} µs per shard key.", ""]
    floor = summary.get("floor")
    if floor:
        lines += [f"Hand-over floor ({floor['source']}, {floor['date']}): {floor['rows_per_s_per_core']:,.0f} rows/s "
                  f"per core = {floor['hand_over_us_per_row']:.2f} µs per row. The throughput goal (half the floor's "
                  f"rate) allows {floor['goal_us_per_row']:.2f} µs per row in all, so "
                  f"{floor['left_after_hand_over_us']:.2f} µs for everything after the hand-over: our lookups "
                  f"alone take {floor['lookup_share_of_what_is_left']:.0%} of that for this batch mix."]
    else:
        lines.append("No bench_spark_floor.py result found: the hand-over floor is not beside these figures.")
    return "\n".join(lines) + "\n"


def run(keys: int, batch: int, repeat: int, out: Path, floor_json: str | None = None) -> dict:
    import platform
    meta = {"date": datetime.date.today().isoformat(), "load_before": load_average(), "repeat": repeat,
            "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}
    work = tempfile.mkdtemp(prefix="bench-index-lookup-")
    try:
        sst = os.path.join(work, "shard.sst")
        ids = make_shard(keys, sst)
        batch_keys, _ = make_batch(ids, batch)
        m = measure(sst, batch_keys, work, repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = load_average()
    floor, floor_path = newest_floor(floor_json)
    summary = summarize(keys, batch, m, floor, floor_path)
    out.mkdir(parents=True, exist_ok=True)
    (out / "index_lookup.json").write_text(json.dumps({"meta": meta, "summary": summary, "runs_s": m["runs_s"]},
                                                      indent=2))
    (out / "index_lookup.md").write_text(report(meta, summary, m))
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=5_000_000, help="keys in the shard (20M rows over 4 shards)")
    parser.add_argument("--batch", type=int, default=2_500_000, help="keys looked up (10M rows over 4 shards)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--floor-json", help="a bench_spark_floor.py result (default: the newest recorded)")
    parser.add_argument("--out", type=Path, default=RESULTS / datetime.date.today().isoformat() / "index_lookup")
    args = parser.parse_args(argv)
    summary = run(args.keys, args.batch, args.repeat, args.out, args.floor_json)
    print((args.out / "index_lookup.md").read_text())
    print(json.dumps(summary["us_per_batch_key"], indent=2))


if __name__ == "__main__":
    main()
