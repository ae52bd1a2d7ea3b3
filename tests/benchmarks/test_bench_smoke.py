"""The upsert benchmark at a tiny size: every measured step runs, the guard checks pass, the report is written
with sane numbers. delta-rs and the plot need the `bench` dependency group; without it they are skipped and
the report says so."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_upsert



@pytest.mark.spark
def test_smoke(spark_session, tmp_path):
    out = tmp_path / "results"
    # end to end (5 spark-submits) and pure pypaimon are left to the real run: too slow for a smoke test
    peers = ("ours", "pypaimon-rust", "delta", "floor")
    results = bench_upsert.run([2_000], 200, out, peers, shards=2, spark=spark_session, work=tmp_path / "work")

    r = results[0]
    assert (r["updates"], r["moved"], r["new"]) == (100, 10, 100)
    assert set(r["ours_in_job"]) == set(bench_upsert.STEPS)
    assert all("error" not in step and 0 < step["s"] < 60 and step["rss_mib"] > 0
               for step in r["ours_in_job"].values())  # compaction included: thin-mode files compact too
    written = r["ours_in_job_results"]["assign_and_write"]
    assert (written["rows_in"], written["moved_keys"]) == (200, 10)
    for peer in ("pypaimon-rust", "floor"):
        assert 0 < r["peers"][peer]["s"] <= r["peers"][peer]["wall_s"] and r["peers"][peer]["rss_mib"] > 10
    assert r["derived"]["ours_upsert_in_job_s"] > 0 and r["derived"]["peer_vs_ours"]["pypaimon-rust"]["in_job"] > 0

    report = (out / "results.md").read_text()
    assert "ours, in-job" in report and "pypaimon-rust" in report and "| 2,000 |" in report
    saved = json.loads((out / "results.json").read_text())
    assert saved["results"][0]["rows"] == 2_000 and saved["meta"]["machine"]
    if bench_upsert.delta_available():
        assert r["peers"]["delta"]["s"] > 0
    else:
        assert "delta-rs skipped" in report
    try:
        import matplotlib  # noqa: F401
        assert (out / "upsert_time.png").stat().st_size > 1000
    except ImportError:
        assert "plot skipped" in report


def test_guard_catches_a_wrong_upsert():
    base, batch, facts = bench_upsert.make_data(100, 20)
    read = base.select(["id", "dt", "amount"])
    with pytest.raises(AssertionError, match="rows read back"):
        bench_upsert.verify(read, batch, 100 + facts["new"], "lost the new keys")
    with pytest.raises(AssertionError, match="exactly once"):
        bench_upsert.verify(pa.concat_tables([read, read.slice(0, 10)]), batch, 110, "a key twice")
    not_applied = pa.concat_tables([read, batch.select(["id", "dt", "amount"]).filter(pc.field("id") >= 100)])
    with pytest.raises(AssertionError, match="column dt"):
        bench_upsert.verify(not_applied, batch, 110, "updates not applied")


def test_deletion_vector_benchmark_smoke(tmp_path):
    """Both variants load, upsert and read back the same keys; the report has every figure."""
    import bench_deletion_vectors

    r = bench_deletion_vectors.run(3_000, 300, 3, tmp_path / "out", java=False, work=tmp_path / "work")
    assert all(len(v["compact_s"]) == 3 for v in r["variants"].values())
    for v in r["variants"].values():
        assert len(v["upsert_s"]) == 3 and all(0 < s < 60 for s in v["upsert_s"]) and v["read_pypaimon_s"] > 0
    assert r["variants"]["plain"]["rows_read"] == r["variants"]["deletion-vectors"]["rows_read"] > 3_000
    assert "deletion-vectors" in (tmp_path / "out" / "deletion_vectors.md").read_text()


def test_java_floor_benchmark_smoke(tmp_path):
    """bench_java_floor on the deletion-vector benchmark's tiny tables: five tables of the same rows read by Java
    Paimon, twice per JVM (the warm read reported), the report written."""
    import bench_deletion_vectors
    import bench_java_floor

    bench_deletion_vectors.run(2_000, 200, 2, tmp_path / "dv", java=False, work=tmp_path / "work")
    r = bench_java_floor.run(tmp_path / "work", tmp_path / "out", rounds=1, reads=2)
    assert r["rows"] > 2_000 and set(r["warm_ms"]) == {"plain", "deletion-vectors", "plain, full",
                                                       "deletion-vectors, full", "append-only"}
    assert all(ms >= 0 for ms in r["warm_ms"].values())
    assert "warm read" in (tmp_path / "out" / "java_floor.md").read_text()


@pytest.mark.spark
def test_batch_size_benchmark_smoke(spark_session, tmp_path, monkeypatch):
    """Two batch sizes in-job with pypaimon-rust beside, and a first load through spark-submitted jobs (in two
    source files): every upsert verified, rates and the report written."""
    import bench_batch_size

    monkeypatch.setattr(bench_batch_size, "CHUNK", 1_500)
    out = tmp_path / "out"
    r = bench_batch_size.run(2_000, [200, 2_000], 3_000, out, ("ours", "pypaimon-rust"), shards=2,
                             spark=spark_session, work=tmp_path / "work", warm=False)
    assert [b["batch"] for b in r["batches"]] == [200, 2_000]
    for b in r["batches"]:
        assert (b["in_job_write_s"] > 0 and b["in_job_write_rows_per_s_per_core"] > 0
                and b["peers_s"]["pypaimon-rust"] > 0)
    load = r["first_load"]
    assert (load["rows"], load["snapshot_id"]) == (3_000, 1) and load["assign_and_write"]["rss_mib"] > 100
    # PSS counts the Python workers' shared pages once: above zero, below the summed RSS
    assert 100 < load["assign_and_write"]["pss_mib"] < load["assign_and_write"]["rss_mib"]
    report = (out / "batch_size.md").read_text()
    assert "| 2,000 |" in report and "First load of 3,000 rows" in report and "Linearity, in-job" in report


@pytest.mark.spark
def test_spark_floor_benchmark_smoke(spark_session, tmp_path):
    import bench_spark_floor

    r = bench_spark_floor.run(3_000, 1, tmp_path / "out", spark=spark_session, work=tmp_path / "work",
                              part_keys=4_000)
    assert set(r["throughput"]) == {"key shuffle, JVM only", "key shuffle, then Python workers",
                                    bench_spark_floor.SECOND_SHUFFLE}
    parts = r["write_parts"]
    assert (parts["batch"], parts["known"], parts["new"]) == (2_000, 1_000, 1_000)
    assert len(parts["parts"]) == 3 and all(p["us_per_row"] > 0 for p in parts["parts"].values())
    assert all(v["s"] > 0 and v["rows_per_s_per_core"] > 0 for v in r["throughput"].values())
    jobs = {k: v for k, v in r["latency"].items() if k != "sum"}
    assert len(jobs) == 2 and all(len(v["runs_s"]) == 2 and v["wall_s"] > 0.5 for v in jobs.values())
    assert r["latency"]["sum"] == pytest.approx(sum(v["wall_s"] for v in jobs.values()), abs=0.002)
    report = (tmp_path / "out" / "spark_floor.md").read_text()
    assert ("sum: the least a spark-submit-mode DAG run takes" in report and "SstFileWriter" in report
            and "adds its second shuffle" in report)


def test_index_lookup_smoke(tmp_path):
    """The lookup-floor benchmark at a tiny size: every way runs on the same keys, the known/new split is the
    batch's, and the report puts the hand-over floor beside it."""
    import bench_index_lookup

    floor = tmp_path / "spark_floor.json"
    floor.write_text(json.dumps({"meta": {"date": "2026-01-01"},
                                 "throughput": {"key shuffle, then Python workers": {"rows_per_s_per_core": 500_000}}}))
    summary = bench_index_lookup.run(4_000, 1_000, 1, tmp_path / "out", str(floor))
    assert (summary["known"], summary["new"]) == (500, 500)
    assert all(v > 0 for v in summary["us_per_batch_key"].values())
    assert summary["floor"]["hand_over_us_per_row"] == pytest.approx(2.0)
    assert summary["floor"]["goal_us_per_row"] == pytest.approx(4.0)
    report = (tmp_path / "out" / "index_lookup.md").read_text()
    assert "ShardIndex.lookup" in report and "500,000 rows/s" in report
