"""``python -m airflow_paimon.job_env create PATH [--python X] [--provider WHEEL] [--constraint FILE]`` and
``python -m airflow_paimon.job_env pack PATH ARCHIVE`` (docs: Install)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from airflow_paimon.job_env.build import create, pack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m airflow_paimon.job_env",
        description="The job environment of airflow-paimon: everything that touches Paimon.")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("create", help="a venv with this provider and its 'jobs' extra")
    c.add_argument("path", type=Path)
    c.add_argument("--python", help="the venv's interpreter (default: this one)")
    c.add_argument("--provider", help="install the provider from this wheel or directory (default: where the "
                                      "installed one came from)")
    c.add_argument("--constraint", type=Path, help="install the job side under this constraints file (default: "
                                                   "the one shipped with the provider, made from its lock)")
    p = sub.add_parser("pack", help="a tar.gz of a job environment for spark.archives")
    p.add_argument("path", type=Path)
    p.add_argument("archive", type=Path)
    args = parser.parse_args(argv)
    start = time.monotonic()
    if args.command == "create":
        try:
            python = create(args.path, args.python, args.provider, args.constraint)
        except (FileExistsError, FileNotFoundError, ValueError) as e:  # what to give instead, in words
            parser.error(str(e))
        print(f"job environment ready in {time.monotonic() - start:.0f} s; set [paimon] job_python = {python}")
    else:
        archive = pack(args.path, args.archive)
        print(f"packed in {time.monotonic() - start:.0f} s; Spark connection extra job_archive = {archive.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
