"""Benchmark: the same cross-partition table with and without deletion vectors (``deletion-vectors.enabled``),
loaded with M rows, then upserted R times with batches of B rows (half updates of which a tenth move partition,
half new keys; the batches of bench_upsert), each followed by the compact task of ``paimon_upsert`` (scope
``snapshot``, Paimon's universal strategy; ``--no-compaction`` leaves it out). Per variant: each run's write +
commit time and its compaction's (the engine's jobs
in-process through the tests' local runner — assign-and-write tasks one after another, no Spark, so both variants
pay the same), then the time of a full read of the table after the R runs with pypaimon and with Java Paimon 1.0
(each best of 3; Java's from opening the catalog to its last row, JVM start excluded). The two variants take
turns at every step (load, each upsert and compaction, each Java read), so a change in the machine's load hits
both alike; the load average is recorded with the figures. Both tables are
read back and checked against each other and the expected keys, so a fast but wrong run reports nothing.

    python tests/benchmarks/bench_deletion_vectors.py [--rows 5000000] [--batch 100000] [--runs 10] [--out DIR]
        [--no-java]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
import bench_upsert  # noqa: E402 - the table's columns and batches

VARIANTS = {"plain": {}, "deletion-vectors": {"deletion-vectors.enabled": "true"}}


def spec(extra: dict):
    from airflow_paimon.engine.table.table import TableSpec

    return TableSpec.from_dict({**bench_upsert.CROSS, "options": {"bucket": "-1", **extra}})


def upsert_timed(warehouse: str, table_spec, batch: pa.Table, run_id: str) -> float:
    from local_runner import bootstrap, upsert

    started = time.perf_counter()
    upsert(bootstrap({"warehouse": warehouse}, bench_upsert.TABLE, warehouse + "/.index", 2), batch, run_id)
    return time.perf_counter() - started


def compact_timed(warehouse: str, run_id: str) -> float:
    """The compact task of paimon_upsert (scope 'snapshot', Paimon's universal strategy), in-process."""
    from airflow_paimon.engine.table.table import get_table
    from local_runner import compact

    started = time.perf_counter()
    compact(get_table({"warehouse": warehouse}, bench_upsert.TABLE), run_id=run_id)
    return time.perf_counter() - started


def batches(m: int, b: int, runs: int) -> tuple[pa.Table, list[pa.Table], int]:
    """The initial M rows and R batches over a growing key space; the number of keys after all of them."""
    base, _, _ = bench_upsert.make_data(m, b, seed=0)
    out, keys = [], m
    for r in range(runs):
        _, batch, facts = bench_upsert.make_data(keys, b, seed=r + 1)
        out.append(batch)
        keys += facts["new"]
    return base, out, keys


def read_pypaimon(warehouse: str) -> tuple[float, pa.Table]:
    from airflow_paimon.engine.table.table import get_table

    best, rows = float("inf"), None
    for _ in range(3):
        started = time.perf_counter()
        builder = get_table({"warehouse": warehouse}, bench_upsert.TABLE).new_read_builder()
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        best = min(best, time.perf_counter() - started)
    return best, rows


def read_java(warehouses: dict[str, str], expect_rows: int) -> dict[str, dict]:
    """Java Paimon's full read (every field of every row, nothing printed) of each table, best of 3 with the
    tables taking turns, JVM start excluded: per table the fastest run's {"rows", "read_ms", "plan_ms" (catalog to
    reader), "cpu_ms" (the JVM's, steadier under load)}."""
    from java_paimon import java_count

    best: dict[str, dict] = {}
    for _ in range(3):
        for name, warehouse in warehouses.items():
            counted = java_count(warehouse, bench_upsert.TABLE)
            if counted["rows"] != expect_rows:
                raise AssertionError(f"Java read {counted['rows']} rows of {name}, expected {expect_rows}")
            if name not in best or counted["read_ms"] < best[name]["read_ms"]:
                best[name] = counted
    return best


def load_average() -> float:
    """The machine's 1-minute load average (2 cores: above 2 the variants wait for CPU)."""
    return os.getloadavg()[0]


def run(m: int, b: int, runs: int, out: Path, java: bool = True, work: Path | None = None,
        compaction: bool = True) -> dict:
    from airflow_paimon.engine.table.table import get_or_create_table

    work = Path(work or tempfile.mkdtemp(prefix="bench-dv-"))
    base, upserts, keys = batches(m, b, runs)
    result = {"rows": m, "batch": b, "runs": runs, "compaction": compaction, "variants": {},
              "load_before": load_average(), "work": str(work)}  # bench_java_floor.py reads its tables
    # the variants take turns at every step, so a change in the machine's load hits both alike
    warehouses = {name: str(work / name) for name in VARIANTS}
    specs = {name: spec(options) for name, options in VARIANTS.items()}
    steps = {name: {"upsert_s": [], "compact_s": [], "load_upserts": []} for name in VARIANTS}
    for name in VARIANTS:
        get_or_create_table({"warehouse": warehouses[name]}, bench_upsert.TABLE, specs[name])
        steps[name]["load_s"] = upsert_timed(warehouses[name], specs[name], base, "load")
    for i, batch in enumerate(upserts):
        for name in VARIANTS:
            steps[name]["upsert_s"].append(upsert_timed(warehouses[name], specs[name], batch, f"r{i}"))
            steps[name]["load_upserts"].append(load_average())
            if compaction:  # as the paimon_upsert group does after each commit
                steps[name]["compact_s"].append(compact_timed(warehouses[name], f"c{i}"))
    reads = {}
    for name in VARIANTS:
        read_s, rows = read_pypaimon(warehouses[name])
        ids = np.sort(rows.column("id").to_numpy())
        if not np.array_equal(ids, np.arange(keys)):
            raise AssertionError(f"{name}: {len(ids)} rows read back, keys are not 0..{keys - 1} exactly once")
        reads[name] = rows.sort_by("id")
        v = steps[name]
        result["variants"][name] = {**v, "upsert_median_s": statistics.median(v["upsert_s"]),
                                    "compact_median_s": statistics.median(v["compact_s"]) if v["compact_s"] else None,
                                    "read_pypaimon_s": read_s, "rows_read": rows.num_rows}
    java_best = read_java(warehouses, keys) if java else {}
    for name in VARIANTS:
        result["variants"][name].update(read_java_s=java_best[name]["read_ms"] / 1000 if java else None,
                                        read_java_best=java_best.get(name))
    result["load_after"] = load_average()
    if not reads["plain"].equals(reads["deletion-vectors"]):
        raise AssertionError("the two tables read differently")
    plain, dv = result["variants"]["plain"], result["variants"]["deletion-vectors"]
    result["ratios"] = {"upsert_dv_over_plain": dv["upsert_median_s"] / plain["upsert_median_s"],
                        "read_pypaimon_plain_over_dv": plain["read_pypaimon_s"] / dv["read_pypaimon_s"],
                        "read_java_plain_over_dv": (plain["read_java_s"] / dv["read_java_s"]) if java else None}
    out.mkdir(parents=True, exist_ok=True)
    (out / "deletion_vectors.json").write_text(json.dumps(result, indent=2))
    (out / "deletion_vectors.md").write_text(report(result))
    return result


def report(r: dict) -> str:
    after = "a compaction (scope snapshot) after each" if r.get("compaction") else "no compaction"
    lines = [f"M = {r['rows']:,} rows, B = {r['batch']:,}, {r['runs']} runs, {after}; engine in-process (no Spark)",
             "", "| variant | load M | upsert B (median of runs) | compaction (median, max) | full read, pypaimon "
             "| full read, Java Paimon |", "|---|---:|---:|---:|---:|---:|"]
    for name, v in r["variants"].items():
        java = f"{v['read_java_s']:.2f} s" if v["read_java_s"] is not None else "not run"
        comp = (f"{v['compact_median_s']:.2f} s, {max(v['compact_s']):.2f} s" if v.get("compact_s") else "—")
        lines.append(f"| {name} | {v['load_s']:.2f} s | {v['upsert_median_s']:.2f} s | {comp} "
                     f"| {v['read_pypaimon_s']:.2f} s | {java} |")
    ratios = r["ratios"]
    lines += ["", f"- upsert, deletion vectors / plain: {ratios['upsert_dv_over_plain']:.2f}x",
              f"- full read, plain / deletion vectors: pypaimon {ratios['read_pypaimon_plain_over_dv']:.2f}x"
              + (f", Java {ratios['read_java_plain_over_dv']:.2f}x" if ratios["read_java_plain_over_dv"] else "")]
    for name, v in r["variants"].items():
        if v.get("read_java_best"):
            j = v["read_java_best"]
            lines.append(f"- Java's fastest read, {name}: {j['read_ms']} ms, of which {j.get('plan_ms')} ms catalog, "
                         f"classes and planning; JVM CPU {j.get('cpu_ms')} ms")
    if "load_before" in r:
        loads = [x for v in r["variants"].values() for x in v.get("load_upserts", [])]
        lines.append(f"- load average (1 min, 2 cores): {r['load_before']:.1f} at the start, "
                     f"{min(loads):.1f}–{max(loads):.1f} during the upserts (median {statistics.median(loads):.1f}), "
                     f"{r['load_after']:.1f} at the end; the variants take turns at every step")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path,
                        default=ROOT / "tests" / "benchmarks" / "results" / time.strftime("%Y-%m-%d"))
    parser.add_argument("--no-java", action="store_true")
    parser.add_argument("--no-compaction", action="store_true", help="upserts only, no compaction between them")
    args = parser.parse_args()
    result = run(args.rows, args.batch, args.runs, args.out, java=not args.no_java, compaction=not args.no_compaction)
    print(report(result))


if __name__ == "__main__":
    main()
