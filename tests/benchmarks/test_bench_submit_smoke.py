"""The spark-submit overhead benchmark (bench_submit.py) at a tiny size: every job runs in-job and as the operator
submits it, the trivial submits run, and the report has every figure. Its own file, so pytest-xdist can run it
beside the other benchmark smoke tests: ≈ 50 s of spark-submits here, more on a fresh machine (the first
submit of each job writes its class-data-sharing archive)."""
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
    result = bench_submit.run(1_000, 100, repeat=1, shards=2, log=lambda *_: None, spark=spark_session)
    summary = result["summary"]
    assert summary["trivial_plain_s"] > 0 and summary["trivial_default_conf_s"] > 0
    assert set(summary["jobs"]) == set(STEPS)
    for step, job in summary["jobs"].items():  # every job ran both ways, a submit costs more than the job itself
        assert 0 <= job["in_job_s"] < job["e2e_s"], (step, job)
        assert job["overhead_s"] == pytest.approx(job["e2e_s"] - job["in_job_s"], abs=1e-3)
    text = bench_submit.report(summary)
    assert all(f"| {step} |" in text for step in STEPS) and "target overhead" in text
