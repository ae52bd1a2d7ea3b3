"""The record of the last full run's seconds per test file (tests/durations.json) covers every test file and no
other, and docs/testing.md's budget table states its sums by directory, each within its budget: a new slow test
is a visible decision (raise the budget in the docs), not a drift."""
from __future__ import annotations

import re
from pathlib import Path

import durations

ROOT = Path(__file__).resolve().parents[3]

ROW = re.compile(r"^\| `tests/(\w+)/` \| (\d[\d,]*) \| (\d[\d,]*) \|", re.MULTILINE)


def test_every_test_file_is_recorded_and_every_record_is_a_test_file():
    recorded, files = set(durations.load()), set(durations.test_files())
    assert not files - recorded, f"not in tests/durations.json (run tests/durations.py on a full run's log): " \
                                 f"{sorted(files - recorded)}"
    assert not recorded - files, f"in tests/durations.json but gone: {sorted(recorded - files)}"


def test_the_docs_budget_table_is_the_record_and_each_directory_is_within_its_budget():
    rows = {d: (int(s.replace(",", "")), int(b.replace(",", "")))
            for d, s, b in ROW.findall((ROOT / "docs" / "testing.md").read_text())}
    sums = durations.by_directory(durations.load())
    assert {d: s for d, (s, _) in rows.items()} == sums
    over = {d: (s, b) for d, (s, b) in rows.items() if s > b}
    assert not over, f"over budget (seconds, budget): {over}"


def test_a_durations_report_sums_setup_call_and_teardown_per_file():
    report = """============================= slowest durations =============================
12.50s call     tests/dag/test_upsert_dag.py::test_a[x-1]
1.25s setup    tests/dag/test_upsert_dag.py::test_a[x-1]
3.00s call     tests/unit/commit/test_history.py::TestX::test_b
0.25s teardown tests/dag/test_upsert_dag.py::test_b
"""
    assert durations.per_file(report) == {"dag/test_upsert_dag.py": 14.0, "unit/commit/test_history.py": 3.0}
    record = durations.record(report)
    assert list(record)[:2] == ["dag/test_upsert_dag.py", "unit/commit/test_history.py"]
    assert set(record) == set(durations.test_files()) and record["dag/test_connect.py"] == 0
