"""Seconds each test file took in a full run, from pytest's ``--durations`` report (the README's test command
prints it): ``python tests/durations.py RUN.log`` rewrites tests/durations.json. tests/conftest.py hands files to
the xdist workers longest first by it; docs/testing.md's budget table sums it by directory."""
from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
RECORD = TESTS / "durations.json"
# "123.45s call     tests/dag/test_x.py::test_y[param]" (setup, call and teardown each on a line of its own)
LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(?:tests/)?(\S+?\.py)::")


def test_files() -> list[str]:
    """Every test module under tests/, relative to it."""
    return sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py"))


def per_file(report: str) -> dict[str, float]:
    """Seconds per test file in a ``--durations`` report (setup + call + teardown of its tests)."""
    seconds: dict[str, float] = defaultdict(float)
    for line in report.splitlines():
        found = LINE.match(line)
        if found:
            seconds[found.group(2)] += float(found.group(1))
    return dict(seconds)


def record(report: str) -> dict[str, int]:
    """Every test file with its whole seconds in ``report`` (0: too short to be listed), longest first."""
    seconds = per_file(report)
    files = {f: round(seconds.get(f, 0.0)) for f in test_files()}
    return dict(sorted(files.items(), key=lambda kv: (-kv[1], kv[0])))


def load() -> dict[str, int]:
    return json.loads(RECORD.read_text())


def by_directory(files: dict[str, int]) -> dict[str, int]:
    """Seconds per top directory of tests/ (unit, dag, scheduler, ...)."""
    out: dict[str, int] = defaultdict(int)
    for f, s in files.items():
        out[f.split("/", 1)[0]] += s
    return dict(out)


if __name__ == "__main__":
    files = record(Path(sys.argv[1]).read_text(errors="replace"))
    RECORD.write_text(json.dumps(files, indent=0) + "\n")
    for directory, s in sorted(by_directory(files).items(), key=lambda kv: -kv[1]):
        print(f"{directory:12} {s:6d} s")
