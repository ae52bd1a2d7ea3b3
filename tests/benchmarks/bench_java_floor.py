"""Java Paimon 1.0's full-read floor for bench_deletion_vectors' tables: how fast Java can read those rows at all.

Given that benchmark's work directory (``plain`` and ``deletion-vectors`` warehouses after its R runs), times Java's
full read (tests/java_paimon.py ``java_count``: every field of every row, JVM start excluded) of five tables holding
the same rows, rounds interleaved, best of ``--rounds``:

- ``plain``, ``deletion-vectors``: the tables as the benchmark left them;
- ``plain, full``, ``deletion-vectors, full``: copies fully compacted (one file per bucket at the max level, no
  vectors left) — the best layout a primary-key table can have;
- ``append-only``: the same rows in a table without primary key (partitioned by dt, one pypaimon write) — no
  merge and no vectors to apply.

With ``--reads N`` each timing is N reads in one JVM, and the table also shows the best read after the first
(classes loaded, code compiled): what a long-lived reader (a Trino or Spark worker) pays.

    python tests/benchmarks/bench_java_floor.py WORK [--rounds 3] [--reads 1] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
import bench_upsert  # noqa: E402 - the table's name


def full_copy(src: Path, dst: Path) -> str:
    """``src``'s warehouse copied to ``dst`` and fully compacted."""
    from airflow_paimon.engine.table.table import get_table
    from local_runner import compact

    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    compact(get_table({"warehouse": str(dst)}, bench_upsert.TABLE), run_id="full", full=True, scope="table")
    return str(dst)


def append_only_copy(src: Path, dst: Path) -> str:
    """The rows of ``src``'s table in a new table without primary key, partitioned by dt."""
    from pypaimon import CatalogFactory, Schema

    from airflow_paimon.engine.table.table import get_table

    builder = get_table({"warehouse": str(src)}, bench_upsert.TABLE).new_read_builder()
    rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).sort_by([("dt", "ascending"),
                                                                                     ("id", "ascending")])
    shutil.rmtree(dst, ignore_errors=True)
    catalog = CatalogFactory.create({"warehouse": str(dst)})
    catalog.create_database("db", True)
    catalog.create_table(bench_upsert.TABLE, Schema.from_pyarrow_schema(rows.schema, partition_keys=["dt"]), False)
    write_builder = catalog.get_table(bench_upsert.TABLE).new_batch_write_builder()
    write, commit = write_builder.new_write(), write_builder.new_commit()
    write.write_arrow(rows)
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    return str(dst)


def run(work: Path, out: Path, rounds: int = 3, reads: int = 1) -> dict:
    from java_paimon import java_count

    floor = work / "floor"
    tables = {"plain": str(work / "plain"), "deletion-vectors": str(work / "deletion-vectors"),
              "plain, full": full_copy(work / "plain", floor / "plain-full"),
              "deletion-vectors, full": full_copy(work / "deletion-vectors", floor / "deletion-vectors-full"),
              "append-only": append_only_copy(work / "plain", floor / "append-only")}
    runs: dict[str, list] = {name: [] for name in tables}
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for name, warehouse in tables.items():
            runs[name].append(java_count(warehouse, bench_upsert.TABLE, reads))
    counts = {r["rows"] for rs in runs.values() for r in rs}
    if len(counts) != 1:
        raise AssertionError(f"the tables read different row counts: {counts}")
    result = {"rounds": rounds, "reads": reads, "loads": loads, "rows": counts.pop(),
              "best": {name: min(rs, key=lambda r: r["read_ms"]) for name, rs in runs.items()},
              "min_cpu_ms": {name: min(r["cpu_ms"] for r in rs) for name, rs in runs.items()}, "runs": runs}
    if reads > 1:
        result["warm_ms"] = {name: min(r["warm_read_ms"] for r in rs) for name, rs in runs.items()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "java_floor.json").write_text(json.dumps(result, indent=2))
    (out / "java_floor.md").write_text(report(result))
    return result


def report(r: dict) -> str:
    plain, warm = r["best"]["plain"]["read_ms"], r.get("warm_ms")
    lines = [f"Java Paimon 1.0, full read of the same {r['rows']:,} rows, best of {r['rounds']} (rounds interleaved); "
             f"load average {', '.join(f'{x:.1f}' for x in r['loads'])} at the rounds' starts (2 cores)", "",
             "| table | read (best) | of which catalog, classes, planning | JVM CPU (least) | plain / this |"
             + (f" warm read (best of reads 2–{r['reads']} in one JVM) | plain / this, warm |" if warm else ""),
             "|---|---:|---:|---:|---:|" + ("---:|---:|" if warm else "")]
    for name, best in r["best"].items():
        lines.append(f"| {name} | {best['read_ms']} ms | {best['plan_ms']} ms | {r['min_cpu_ms'][name]} ms "
                     f"| {plain / best['read_ms']:.2f}x |"
                     + (f" {warm[name]} ms | {warm['plain'] / warm[name]:.2f}x |" if warm else ""))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path, help="bench_deletion_vectors' work directory (after its runs)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reads", type=int, default=1, help="reads per JVM (> 1: warm reads too)")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    print(report(run(args.work, args.out, args.rounds, args.reads)))


if __name__ == "__main__":
    main()
