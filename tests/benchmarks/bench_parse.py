"""Benchmark: how long Airflow takes to parse an example DAG file, and which heavy modules parsing imports.

Each repeat is a fresh Python process (nothing cached in ``sys.modules``) that imports Airflow, then times
``DagBag(dag_folder=FILE)`` alone (Airflow 3.2's DagBag never loads the bundled examples): the cost the DAG
processor pays per file. The median of ``--repeat`` runs is printed.

    python tests/benchmarks/bench_parse.py [dags/paimon_upsert_daily.py ...] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HEAVY = ("pypaimon", "pyarrow", "pandas", "pyspark", "rocksdict", "numpy")

_ONE_PARSE = """
import json, sys, time
from airflow.dag_processing.dagbag import DagBag
start = time.perf_counter()
bag = DagBag(dag_folder=sys.argv[1])
seconds = time.perf_counter() - start
assert bag.dags and not bag.import_errors, bag.import_errors
print(json.dumps({"seconds": seconds, "heavy": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def parse_once(dag_file: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _ONE_PARSE, dag_file, *HEAVY], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("files", nargs="*", default=[str(root / "dags" / "paimon_upsert_daily.py")])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for dag_file in args.files:
        runs = [parse_once(dag_file) for _ in range(args.repeat)]
        seconds = [r["seconds"] for r in runs]
        print(f"{Path(dag_file).name}: median {statistics.median(seconds):.3f} s "
              f"(runs {', '.join(f'{s:.3f}' for s in seconds)}); heavy modules imported: {runs[0]['heavy']}")


if __name__ == "__main__":
    main()
