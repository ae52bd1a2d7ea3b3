"""Benchmark: the fixed cost of spark-submitting our jobs. For each job of one upsert round (cold bootstrap,
assign-and-write, commit, warm bootstrap, compact) on a small cross-partition table:

- in-job: the job's function in one warm local[2] SparkSession (workers warm: the first round is dropped);
- end to end: ``spark-submit spark_jobs/<job>.py --spec-file .. --result-uri ..`` as the operator submits it
  (bench_upsert's ``submit_command``: the operator's default conf, ``--conf`` on top as its spark_conf);
- a trivial spark-submit (``SparkSession.builder.getOrCreate(); spark.range(1).collect()``), both plain
  (only the Python interpreter set) and with the operator's default conf.

Each is repeated ``--repeat`` times on a fresh copy of the table; the minimum counts (the machine is shared).
Overhead = min end to end − min in-job; the target is overhead ≤ 1.3 × the plain trivial spark-submit.

    python tests/benchmarks/bench_submit.py [--rows 100000] [--batch 10000] [--repeat 3] [--out FILE.json]
        [--conf KEY=VALUE ...]
"""
from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_upsert import (CROSS, JOB_OF, STEPS, e2e_runner, in_job_runner, load_average, load_paimon,
                          machine, make_data, make_spark, ours, ours_steps, timed, trivial_submit)

TARGET = 1.3


def rounds(n: int, loaded: Path, work: Path, batch: str, shards: int, runner_of) -> list[dict]:
    """``n`` rounds of ``ours_steps``, each on a fresh copy of the loaded table; seconds per step."""
    out = []
    for r in range(n):
        copy = Path(tempfile.mkdtemp(prefix="wh-", dir=work))
        shutil.copytree(loaded, copy, dirs_exist_ok=True)
        steps, _ = ours_steps(runner_of(r), ours(copy, shards), f"r{r}-{copy.name}", batch)
        out.append({step: m.get("s", m.get("wall_s")) for step, m in steps.items() if "error" not in m})
        shutil.rmtree(copy, ignore_errors=True)
    return out


def minimum(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return min(values) if values else None


def summarise(in_job: list[dict], e2e: list[dict], trivial: list[dict]) -> dict:
    plain, default = minimum(trivial, "plain"), minimum(trivial, "default")
    jobs = {}
    for step in STEPS:
        ij, ee = minimum(in_job, step), minimum(e2e, step)
        if ij is None or ee is None:
            jobs[step] = {"in_job_s": ij, "e2e_s": ee}
            continue
        over = round(ee - ij, 3)
        jobs[step] = {"in_job_s": ij, "e2e_s": ee, "overhead_s": over, "over_trivial": round(over / plain, 2),
                      "over_trivial_default_conf": round(over / default, 2)}
    return {"trivial_plain_s": plain, "trivial_default_conf_s": default, "jobs": jobs,
            "met": all(j.get("over_trivial", 0) <= TARGET for j in jobs.values())}


def run(rows: int, batch_rows: int, repeat: int, shards: int = 4, conf: dict | None = None, log=print,
        spark=None, submitted: tuple[str, ...] = tuple(dict.fromkeys(JOB_OF.values()))) -> dict:
    """``spark``: a session to run the in-job rounds in (left running); else one of its own, stopped after.
    ``submitted``: the jobs measured end to end (spark-submit); the round's other jobs run in-job, unmeasured."""
    work = Path(tempfile.mkdtemp(prefix="bench-submit-"))
    try:
        base, batch, _ = make_data(rows, batch_rows)
        batch_path = str(work / "batch.parquet")
        pq.write_table(batch, batch_path)
        loaded = work / "loaded"
        load_paimon(loaded, CROSS, base)
        session = spark or make_spark()
        # one more in-job round than measured, dropped: the Python workers import the engine in it
        in_job = rounds(repeat + 1, loaded, work, batch_path, shards, lambda r: in_job_runner(session, timed))[1:]
        every = set(submitted) == set(JOB_OF.values())
        if spark is None and every:  # no in-job step beside the submits: the session's JVM is not left running
            session.stop()
        log(f"in-job: {in_job}")

        def mixed(_):
            submit, here = e2e_runner(work, conf), in_job_runner(session, timed)
            return lambda job, spec: (submit if job in submitted else here)(job, spec)

        trivial, e2e = [], []
        for r in range(repeat):  # interleaved, so load from other processes hits all alike
            trivial.append({"plain": trivial_submit(work, name=f"plain-{r}", defaults=False)["wall_s"],
                            "default": trivial_submit(work, conf, name=f"default-{r}")["wall_s"]})
            e2e += [{step: v for step, v in measured.items() if JOB_OF[step] in submitted}
                    for measured in rounds(1, loaded, work, batch_path, shards, mixed)]
            log(f"round {r}: trivial {trivial[-1]}, end to end {e2e[-1]}")
        if spark is None and not every:
            session.stop()
        return {"in_job": in_job, "e2e": e2e, "trivial": trivial, "summary": summarise(in_job, e2e, trivial)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(summary: dict) -> str:
    lines = [f"trivial spark-submit: plain {summary['trivial_plain_s']} s, with the default conf "
             f"{summary['trivial_default_conf_s']} s (min of runs)",
             "| step | in-job s | end to end s | overhead s | ÷ trivial (plain) | ÷ trivial (default conf) |",
             "|---|---:|---:|---:|---:|---:|"]
    for step, j in summary["jobs"].items():
        lines.append(f"| {step} | {j['in_job_s']} | {j['e2e_s']} | {j.get('overhead_s', '')} | "
                     f"{j.get('over_trivial', '')} | {j.get('over_trivial_default_conf', '')} |")
    lines.append(f"target overhead ≤ {TARGET} × trivial (plain): {'met' if summary['met'] else 'NOT met'}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="table size M")
    parser.add_argument("--batch", type=int, default=10_000, help="batch size B")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the minimum counts")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--conf", nargs="*", default=[], metavar="KEY=VALUE",
                        help="extra Spark conf for the end-to-end submits, as the operator's spark_conf")
    parser.add_argument("--out", type=Path, help="write the runs and the summary as JSON here")
    args = parser.parse_args()
    conf = dict(c.split("=", 1) for c in args.conf)
    meta = {"date": datetime.date.today().isoformat(), "machine": machine(), "load_before": load_average(),
            "rows": args.rows, "batch": args.batch, "repeat": args.repeat, "conf": conf}
    result = run(args.rows, args.batch, args.repeat, args.shards, conf)
    meta["load_after"] = load_average()
    print(report(result["summary"]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"meta": meta, **result}, indent=2))


if __name__ == "__main__":
    main()
