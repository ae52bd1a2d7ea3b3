"""The spark-submit overhead benchmark (bench_submit.py) at a tiny size: every job runs in-job, one (the commit)
also as the operator submits it, the trivial submits run, and the report has every figure. Each job kind's own
spark-submit is shown by the DAG tests (tests/dag/test_upsert_dag.py, test_compact_dag.py); here only the
benchmark's code path is, so it pays three submits, not seven."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_submit
from bench_upsert import STEPS


@pytest.mark.spark
def test_submit_benchmark_smoke(spark_session):
    # the module's session: bench_submit would stop its own, and getOrCreate could hand it another test's
    result = bench_submit.run(1_000, 100, repeat=1, shards=2, log=lambda *_: None, spark=spark_session,
                              submitted=("commit",))
    summary = result["summary"]
    assert summary["trivial_plain_s"] > 0 and summary["trivial_default_conf_s"] > 0
    assert set(summary["jobs"]) == set(STEPS)
    for step, job in summary["jobs"].items():  # every job ran in-job; the commit also submitted, costing more
        assert job["in_job_s"] >= 0, (step, job)
        if step != "commit":
            assert job["e2e_s"] is None, (step, job)
            continue
        assert job["in_job_s"] < job["e2e_s"], (step, job)
        assert job["overhead_s"] == pytest.approx(job["e2e_s"] - job["in_job_s"], abs=1e-3)
    text = bench_submit.report(summary)
    assert all(f"| {step} |" in text for step in STEPS) and "target overhead" in text
