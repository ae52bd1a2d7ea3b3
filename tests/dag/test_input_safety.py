"""Hostile input and secrets through the real operators: dag.test(), spark-submit on local[2]."""
from __future__ import annotations

import glob
import json
import os
import threading
import uuid

import pandas as pd
import pytest

from airflow_paimon.engine.table.table import get_table
from dag.dagrun import run_dag
from oracle import assert_table_equals, expected_upsert

pytestmark = pytest.mark.dag


class ProcessSampler(threading.Thread):
    """Reads /proc/*/cmdline and /proc/*/environ of every process, over and over, until stopped. In the
    environment, the test's own connection definition (AIRFLOW_CONN_*, inherited by every child) is skipped;
    it marks the test's own processes, whose spec files are counted."""

    def __init__(self, needle: bytes):
        super().__init__(daemon=True)
        self.needle, self.stop, self.hits, self.samples, self.spec_files = needle, threading.Event(), [], 0, set()

    def run(self):
        while not self.stop.is_set():
            for proc in glob.glob("/proc/[0-9]*"):
                try:
                    with open(f"{proc}/environ", "rb") as f:
                        environ = f.read()
                    with open(f"{proc}/cmdline", "rb") as f:
                        cmdline = f.read()
                except OSError:
                    continue
                # this test's processes inherit its connection (holding the secret); others on the machine don't
                ours = self.needle in environ
                environ = b"\0".join(v for v in environ.split(b"\0") if not v.startswith(b"AIRFLOW_CONN_"))
                for what, data in (("cmdline", cmdline), ("environ", environ)):
                    if self.needle in data:
                        self.hits.append((proc, what, data[:300]))
                args = cmdline.split(b"\0")
                if ours and b"--spec-file" in args:
                    self.spec_files.add(args[args.index(b"--spec-file") + 1].decode())
            self.samples += 1
            self.stop.wait(0.02)


def test_catalog_secrets_never_reach_a_command_line_log_xcom_or_result(airflow_home, warehouse, monkeypatch, tmp_path,
                                                                      capfd, caplog):
    secret = f"SeCrEt-{uuid.uuid4()}"
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps(
        {"conn_type": "paimon", "extra": {"warehouse": warehouse, "catalog_options": {"fs.s3.secret-key": secret}}}))
    source = tmp_path / "batch.parquet"
    batch = pd.DataFrame({"id": [1, 2, 3], "dt": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]})
    batch.to_parquet(source, index=False)
    from paimon_test_dags import seed

    sampler = ProcessSampler(secret.encode())
    sampler.start()
    try:
        run, states, xcoms = run_dag(seed, conf={"source": str(source)})
    finally:
        sampler.stop.set()
        sampler.join()
    assert run.state == "success", states
    # the secret option was really there: pypaimon ignores it for a local warehouse, the write landed
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert([batch], "id"), "id")

    # the sampler saw every submitted job's command line: write and commit (the new table's bootstrap is decided
    # from metadata in the task, no spark-submit)
    assert xcoms["bootstrap_index"]["decided_by"] == "metadata"
    assert len(sampler.spec_files) == 2, sampler.spec_files
    assert sampler.samples > 50
    assert not sampler.hits, sampler.hits
    assert not any(os.path.exists(p) for p in sampler.spec_files), "a spec file outlived its task"
    # their private directories too (only this test's: other tests' jobs may run beside it under pytest-xdist)
    assert not any(os.path.exists(os.path.dirname(p)) for p in sampler.spec_files), "a spec directory outlived its task"
    assert secret not in json.dumps(xcoms)
    out, err = capfd.readouterr()
    assert "--spec-file" in out + err + caplog.text  # the submit command was logged, and captured here
    assert secret not in out + err + caplog.text
    for root in (str(airflow_home["warehouse"].parent / "airflow"), warehouse):
        for path in glob.glob(os.path.join(root, "**", "*"), recursive=True):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    assert secret.encode() not in f.read(), path


@pytest.mark.usefixtures("on_spark_connect")
def test_backfill_refuses_a_traversing_table_name_before_submitting(airflow_home, warehouse, monkeypatch, tmp_path,
                                                                   capfd, caplog):
    from compaction_tables import cross_partition_table
    from dag.dagrun import use_warehouse
    from paimon_backfill import dag

    use_warehouse(monkeypatch, warehouse)
    good = pd.DataFrame({"id": [1, 2], "dt": ["a", "b"], "v": [1.0, 2.0]})
    source = tmp_path / "good.parquet"
    good.to_parquet(source, index=False)
    cross_partition_table(warehouse, [good])  # the table the name aims at: written in-process, no Spark needed
    table_dir = os.path.join(warehouse, "db.db", "t")
    before = sorted(os.path.relpath(p, table_dir) for p in glob.glob(os.path.join(table_dir, "**"), recursive=True))

    capfd.readouterr()
    run, states, _ = run_dag(dag, conf={"source_path": str(source), "table": "db.t/../..", "source_format": None})
    assert run.state == "failed" and states["bootstrap_index"] == "failed", states
    assert run.get_task_instance("bootstrap_index").try_number == 1, "bad input is not retried (the DAG has 2)"
    out, err = capfd.readouterr()
    logged = out + err + caplog.text
    assert "invalid table identifier" in logged and "db.t/../.." in logged
    assert "Spark-Submit cmd" not in logged, "nothing may be submitted for a bad identifier"
    after = sorted(os.path.relpath(p, table_dir) for p in glob.glob(os.path.join(table_dir, "**"), recursive=True))
    assert after == before
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert([good], "id"), "id")


@pytest.mark.usefixtures("on_spark_connect")
@pytest.mark.parametrize("bad", ["corrupt", "ID-and-id"])
def test_corrupt_or_clashing_source_fails_the_write_without_retries(airflow_home, warehouse, monkeypatch, tmp_path,
                                                                   capfd, caplog, bad):
    """A corrupt parquet file, or one with columns ``ID`` and ``id``, fails assign-and-write once (the DAG has
    2 retries) naming the table and the file or the columns; nothing is committed."""
    from compaction_tables import cross_partition_table
    from dag.dagrun import use_warehouse
    from paimon_backfill import dag

    use_warehouse(monkeypatch, warehouse)
    good = pd.DataFrame({"id": [1, 2], "dt": ["a", "b"], "v": [1.0, 2.0]})
    cross_partition_table(warehouse, [good])
    source = tmp_path / "batch.parquet"
    if bad == "corrupt":
        source.write_bytes(b"id,dt,v\n3,a,1.0\n" * 50)
    else:
        pd.DataFrame({"ID": [3], "id": [4], "dt": ["a"], "v": [1.0]}).to_parquet(source, index=False)

    capfd.readouterr()
    run, states, _ = run_dag(dag, conf={"source_path": str(source), "table": "db.t", "source_format": None})
    assert run.state == "failed" and states["assign_and_write"] == "failed", states
    assert run.get_task_instance("assign_and_write").try_number == 1, "bad input is not retried"
    out, err = capfd.readouterr()
    logged = out + err + caplog.text
    expected = (f"table db.t, value '{source}': source file is corrupt or not parquet" if bad == "corrupt"
                else "table db.t, column 'ID', value None: source columns ['ID', 'id'] clash")
    assert f"assign_and_write for table db.t failed: ValidationError: {expected}" in logged
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert([good], "id"), "id")
