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

from airflow_paimon.engine.faults import CRASH_AT
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.shard import IndexOptions, decode_values
from airflow_paimon.engine.index.store import load_shard
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.jobs.specs import JobSpec
from airflow_paimon.engine.table.table import get_table
from faults.batches import ROW_KIND, TABLE_SPEC
from local_runner import DAG_RUN, Pipeline, bootstrap as rebuild_index, in_spark
import processes

RUN_JOB = Path(__file__).with_name("run_job.py")
RUN_COMMIT_TASK = Path(__file__).with_name("run_commit_task.py")
ROOT = RUN_JOB.parents[2]
ATTEMPT_TIMEOUT = 180
JOBS = DAG_RUN


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
    spec_file = workdir / "spec.json"
    spec_file.write_text(json.dumps(spec.to_dict()))
    return _attempt([str(RUN_JOB), job, str(spec_file)], workdir, crash_at)


def commit_task_attempt(task: dict, workdir: Path, crash_at: str) -> Attempt:
    """One attempt of a DAG run's commit task (tests/faults/run_commit_task.py: ``task`` holds the pipeline's
    arguments, the run's results, source and run id) in its own process, SIGKILL at ``crash_at`` once its first
    rewrite has started."""
    workdir.mkdir(parents=True, exist_ok=True)
    task_file = workdir / "task.json"
    task_file.write_text(json.dumps({**task, "crash_at": crash_at}))
    return _attempt([str(RUN_COMMIT_TASK), str(task_file)], workdir)


def _attempt(args: list[str], workdir: Path, crash_at: str | None = None) -> Attempt:
    """``python *args RESULT_FILE`` in its own session, killed with its group when it ends; its result (JSON)."""
    result_file, log_file = workdir / "result.json", workdir / "job.log"
    result_file.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if crash_at:
        env[CRASH_AT] = crash_at
    with open(log_file, "w") as log:
        proc = processes.start([sys.executable, *args, str(result_file)], env=env, stdout=log,
                               stderr=subprocess.STDOUT)
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


def assert_index_consistent(p: Pipeline, scratch: Path) -> int:
    """The next run's bootstrap takes the published index as it is (no rebuild, no catch-up), and that index
    holds exactly what a full rebuild from the table's files holds; returns its key count."""
    boot = p.bootstrap()
    assert boot["index_decision"] == "reused", boot
    snapshot = latest_snapshot(get_table(p.options, p.table))
    assert boot["base_snapshot_id"] == snapshot.id
    published = index_content(boot["index_uri"], snapshot.id)
    fresh = rebuild_index(p.options, p.table, str(scratch / "fresh-index"), p.shards)
    rebuilt = index_content(fresh.index_uri, snapshot.id)
    assert published == rebuilt, (f"index differs from a rebuild: {len(published)} vs {len(rebuilt)} keys, "
                                  f"{len(set(published.items()) ^ set(rebuilt.items()))} entries differ")
    return len(published)


def fault_pipeline(spark, warehouse: str, full_compaction: bool = True) -> Pipeline:
    """The DAG runs the fault tests kill: the batches' table (faults/batches.py) with its row kind column, the jobs
    in-process on the test's Spark session (``attempt`` runs one as a killable process)."""
    return Pipeline({"warehouse": warehouse}, "db.t", run_job=in_spark(spark), table_spec=TABLE_SPEC, dag_id="faults",
                    row_kind_column=ROW_KIND, full_compaction=full_compaction)
