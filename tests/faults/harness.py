"""Fault-test plumbing: run one job attempt as a killable process, and check a table and its index after
recovery — the rows against the oracle (pypaimon and pypaimon-rust), the index against a fresh rebuild."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa

from airflow_paimon.engine import layout
from airflow_paimon.engine.faults import CRASH_AT
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.shard import IndexOptions, decode_values
from airflow_paimon.engine.index.store import load_shard
from airflow_paimon.engine.scan import latest_snapshot
from airflow_paimon.engine.specs import (AssignWriteResult, AssignWriteSpec, BootstrapSpec, CommitSpec, CompactSpec,
                                         JobSpec)
from airflow_paimon.engine.table import get_table
from local_runner import bootstrap as rebuild_index

RUN_JOB = Path(__file__).with_name("run_job.py")
ROOT = RUN_JOB.parents[2]
ATTEMPT_TIMEOUT = 180
JOBS = ("bootstrap_index", "assign_and_write", "commit", "compact")  # one DAG run, in order


class Attempt:
    def __init__(self, returncode: int, result: dict | None, log: str):
        self.returncode, self.result, self.log = returncode, result, log

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL


def attempt(job: str, spec: JobSpec, workdir: Path, crash_at: str | None = None) -> Attempt:
    """One attempt of ``job`` in its own process (its own session, so the JVM and Python workers it starts
    go down with it afterwards); SIGKILL at ``crash_at``."""
    workdir.mkdir(parents=True, exist_ok=True)
    spec_file, result_file, log_file = workdir / "spec.json", workdir / "result.json", workdir / "job.log"
    spec_file.write_text(json.dumps(spec.to_dict()))
    result_file.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if crash_at:
        env[CRASH_AT] = crash_at
    with open(log_file, "w") as log:
        proc = subprocess.Popen([sys.executable, str(RUN_JOB), job, str(spec_file), str(result_file)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = proc.wait(timeout=ATTEMPT_TIMEOUT)
        finally:
            try:  # what the attempt left running (a JVM whose driver was killed): the group of its session
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    result = json.loads(result_file.read_text()) if result_file.exists() else None
    return Attempt(returncode, result, log_file.read_text())


def index_content(index_uri: str, snapshot_id: int | None) -> dict[bytes, tuple[str, int]]:
    """key -> (partition, bucket) of the index published for ``snapshot_id``."""
    manifest = read_manifest(index_uri, snapshot_id)
    assert manifest is not None, f"no index published at {index_uri} for snapshot {snapshot_id}"
    content = {}
    with tempfile.TemporaryDirectory(prefix="fault-index-") as tmp:
        for meta in manifest.shard_meta:
            with load_shard(index_uri, meta, tmp, IndexOptions()) as shard:
                items = list(shard._db.items())
            assert len(items) == meta.keys, f"shard {meta.shard}: {len(items)} keys, manifest says {meta.keys}"
            if items:
                values = decode_values(pa.array([v for _, v in items], pa.binary()))
                content.update(zip([k for k, _ in items], zip(values.partition.to_pylist(),
                                                               values.bucket.tolist())))
    return content


def assert_index_consistent(p: "Pipeline", scratch: Path) -> int:
    """The next run's bootstrap takes the published index as it is (no rebuild, no catch-up), and that index
    holds exactly what a full rebuild from the table's files holds; returns its key count."""
    boot = p.run("bootstrap_index", p.spec("bootstrap_index", {}, "", ""))
    assert boot["index_decision"] == "reused", boot
    snapshot = latest_snapshot(get_table(p.options, p.table))
    assert boot["base_snapshot_id"] == snapshot.id
    published = index_content(boot["index_uri"], snapshot.id)
    fresh = rebuild_index(p.options, p.table, str(scratch / "fresh-index"), p.shards)
    rebuilt = index_content(fresh.index_uri, snapshot.id)
    assert published == rebuilt, (f"index differs from a rebuild: {len(published)} vs {len(rebuilt)} keys, "
                                  f"{len(set(published.items()) ^ set(rebuilt.items()))} entries differ")
    return len(published)


class Pipeline:
    """The specs the operators give the four jobs of one DAG run (bootstrap-index -> assign-and-write ->
    commit -> compact) on one warehouse, and the jobs run in-process on the test's Spark session."""

    def __init__(self, spark, warehouse: str, table: str = "db.t", table_spec: dict | None = None, shards: int = 2,
                 full_compaction: bool = True):
        self.spark, self.warehouse, self.table, self.table_spec, self.shards = (spark, warehouse, table, table_spec,
                                                                                shards)
        self.full_compaction = full_compaction
        self.options = {"warehouse": warehouse}
        self.index_root = layout.default_root(warehouse, "index")
        self.staging_root = layout.default_root(warehouse, "staging")

    def spec(self, job: str, done: dict, source: str, run_id: str) -> JobSpec:
        """The spec of ``job`` in DAG run ``run_id``, given the results (XCom dicts) of the jobs ``done``."""
        common = {"catalog_options": self.options, "table": self.table}
        if job == "bootstrap_index":
            return BootstrapSpec(**common, table_spec=self.table_spec, shards=self.shards, index_root=self.index_root)
        if job == "assign_and_write":
            boot = done["bootstrap_index"]
            return AssignWriteSpec(**common, source={"path": source}, shards=boot["shards"], dag_id="faults",
                                   run_id=run_id, base_snapshot_id=boot["base_snapshot_id"],
                                   index_uri=boot["index_uri"], row_kind_column="op", staging_root=self.staging_root)
        if job == "commit":
            return CommitSpec.after(AssignWriteResult.from_dict(done["assign_and_write"]), **common,
                                    staging_root=self.staging_root)
        if job == "compact":
            return CompactSpec(**common, dag_id="faults", run_id=run_id, snapshot_id=done["commit"]["snapshot_id"],
                               full=self.full_compaction)
        raise ValueError(job)

    def run(self, job: str, spec: JobSpec) -> dict:
        from faults.run_job import run_in

        return run_in(self.spark, job, spec).to_dict()

    def dag_run(self, source: str, run_id: str, jobs=JOBS) -> dict:
        done = {}
        for job in jobs:
            done[job] = self.run(job, self.spec(job, done, source, run_id))
        return done
