"""The one orchestration of the tests and benchmarks: a DAG run's jobs (bootstrap-index → assign-and-write →
commit → compact) on the specs the operators build (engine/jobs/specs.py: each from the results before it, the
connection's default roots), run by a job runner:

- ``in_process``: the engine's orchestrations (engine/runs/bootstrap_index.py,
  engine/runs/assign_and_write.py, engine/runs/commit.py, engine/runs/compact.py), the tasks the Spark glue
  distributes run one after another here — fast engine tests;
- ``in_spark(spark)``: each job's Spark function (spark/job_registry.py) on a session the caller made — the Spark glue
  without spark-submit (tests/spark, the fault tests, the benchmarks).

``bootstrap`` / ``write_run`` / ``stage_run`` / ``upsert`` are the in-process steps of one run on rows in
memory (the Spark source's preparation is tested in tests/spark)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.schema.data_types import PyarrowFieldParser

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.assign.assigner import BUCKET, ORDER, ROW_KIND
from airflow_paimon.engine.assign.fixed import fixed_buckets
from airflow_paimon.engine.commit.ordering import left_out_arrow
from airflow_paimon.engine.commit.properties import RunClock
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.runs.compact import compact as compact_job, compact_task, compaction_identity, run_compaction
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.errors import heals_by_rewrite
from airflow_paimon.engine.merge.rowkind import row_kinds as row_kinds_of
from airflow_paimon.engine.runs.bootstrap_index import bootstrap_index, shards_in
from airflow_paimon.spark.job_registry import JOBS
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.assign.shapes import CROSS_PARTITION, HASH_DYNAMIC, HASH_FIXED, TableShape
from airflow_paimon.engine.jobs.specs import (AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitResult, CommitSpec, CompactSpec, JobSpec, Wire, source_spec)
from airflow_paimon.engine.runs.assign_and_write import assign_and_write
from airflow_paimon.engine.write.buffer import WriteBuffer
from airflow_paimon.engine.runs.cross_partition import assign_and_write_shards
from airflow_paimon.engine.write.task import write_task

DAG_RUN = ("bootstrap_index", "assign_and_write", "commit", "compact")  # one DAG run's jobs, in order
WRITE_JOBS = DAG_RUN[:3]

JobRunner = Callable[[str, JobSpec], Wire]


class Pipeline:
    """One table's DAG runs as the operators chain them: ``spec`` builds a job's spec from the results (XCom
    dicts) of the jobs before it, ``run`` hands it to ``run_job``. Roots default to the connection's
    (layout.default_root of the warehouse), as PaimonHook gives them."""

    def __init__(self, catalog_options: dict, table: str, *, run_job: JobRunner | None = None,
                 table_spec: dict | None = None, shards: int = 2, index_root: str | None = None,
                 staging_root: str | None = None, dag_id: str = "test", row_kind_column: str | None = None,
                 full_compaction: bool = False):
        self.options, self.table, self.table_spec, self.shards = catalog_options, table, table_spec, shards
        self.warehouse = catalog_options["warehouse"]
        self.index_root = index_root or layout.default_root(self.warehouse, "index")
        self.staging_root = staging_root or layout.default_root(self.warehouse, "staging")
        self.run_job, self.dag_id = run_job or in_process, dag_id
        self.row_kind_column, self.full_compaction = row_kind_column, full_compaction  # the operators' arguments

    def spec(self, job: str, done: dict, source: str | dict | None = None, run_id: str = "run",
             **write_args) -> JobSpec:
        """The spec of ``job`` in DAG run ``run_id`` given the results ``done`` (job → XCom dict); ``source`` and
        ``write_args`` (row_kind_column, write_mode, schema_evolution): the assign-and-write operator's (None:
        rows in memory, for ``in_process``)."""
        common = {"catalog_options": self.options, "table": self.table}
        if job == "bootstrap_index":
            return BootstrapSpec(**common, table_spec=self.table_spec, shards=self.shards, index_root=self.index_root)
        if job == "assign_and_write":
            return AssignWriteSpec.after(BootstrapResult.from_dict(done["bootstrap_index"]), **common,
                                         source=source_spec(source) if source is not None else {},
                                         staging_root=self.staging_root, dag_id=self.dag_id, run_id=run_id,
                                         **{"row_kind_column": self.row_kind_column, **write_args})
        if job == "commit":
            return CommitSpec.after(AssignWriteResult.from_dict(done["assign_and_write"]), **common,
                                    staging_root=self.staging_root)
        if job == "compact":
            return CompactSpec(**common, dag_id=self.dag_id, run_id=run_id, full=self.full_compaction,
                               snapshot_id=CommitResult.from_dict(done["commit"]).snapshot_id)
        raise ValueError(job)

    def run(self, job: str, spec: JobSpec) -> dict:
        return self.run_job(job, spec).to_dict()

    def dag_run(self, source: str | dict, run_id: str, jobs=DAG_RUN, **write_args) -> dict:
        """``jobs`` of one DAG run in order; their results by job."""
        done = {}
        for job in jobs:
            done[job] = self.run(job, self.spec(job, done, source, run_id, **write_args))
        return done

    # one job at a time, for tests that look between them
    def bootstrap(self) -> dict:
        return self.run("bootstrap_index", self.spec("bootstrap_index", {}))

    def assign_and_write(self, boot: dict, source: str | dict, run_id: str, **write_args) -> dict:
        return self.run("assign_and_write", self.spec("assign_and_write", {"bootstrap_index": boot}, source, run_id,
                                                      **write_args))

    def commit(self, written: dict) -> dict:
        return self.run("commit", self.spec("commit", {"assign_and_write": written}))

    def commit_task(self, done: dict, source: str | dict, run_id: str, max_rewrites: int = 3,
                    before_rewrite: Callable[[], None] | None = None) -> dict:
        """The commit task as PaimonCommitOperator runs it: the commit job on the run's results ``done``, and on an
        error a rewrite heals (engine/errors.py heals_by_rewrite) bootstrap-index and assign-and-write again against
        the table as it is now, then the commit of that, up to ``max_rewrites`` times. ``before_rewrite``: called as
        each rewrite starts (the fault tests arm a crash point there)."""
        done, rewrites = dict(done), 0
        while True:
            try:
                return self.run("commit", replace(self.spec("commit", done), rewrites=rewrites))
            except Exception as e:  # the operator's rule: only an error a rewrite heals is caught
                if not heals_by_rewrite(e) or rewrites == max_rewrites:
                    raise
            rewrites += 1
            if before_rewrite is not None:
                before_rewrite()
            for job in ("bootstrap_index", "assign_and_write"):
                done[job] = self.run(job, self.spec(job, done, source, run_id))

    def upsert(self, frame, run_id: str, tmp_path, **write_args) -> tuple[dict, dict, dict]:
        """``frame`` (pandas) as a parquet source through bootstrap, assign-and-write and commit."""
        path = tmp_path / f"{run_id}.parquet"
        frame.to_parquet(path, index=False)
        done = self.dag_run(str(path), run_id, WRITE_JOBS, **write_args)
        return done["bootstrap_index"], done["assign_and_write"], done["commit"]


# --- runners ---------------------------------------------------------------------------------------------------

def in_spark(spark) -> JobRunner:
    """Each job's Spark function (spark/job_registry.py) with ``spark`` as its session (None: driver-only jobs)."""
    def run(job: str, spec: JobSpec) -> Wire:
        from airflow_paimon.spark.job_frame import JobRun, job_running
        from airflow_paimon.spark.job_runner import job_function

        with job_running(JobRun(None, spark=spark)):
            return job_function(JOBS[job])(spec)
    return run


def in_process(job: str, spec: JobSpec, rows: pa.Table | None = None, row_kinds=None, write=None) -> Wire:
    """``job``'s engine orchestration in this process. assign-and-write writes ``rows`` (row kinds ``row_kinds``,
    default all +I), not ``spec.source``; ``write``: instead of the in-process pipeline."""
    if job == "bootstrap_index":
        return bootstrap_index(spec, LocalIndexTasks())
    if job == "assign_and_write":
        if rows is None:
            raise ValueError("in_process writes rows in memory; in_spark reads spec.source")
        return assign_and_write(spec, LocalWriteTasks(rows, row_kinds, write))
    if job == "commit":
        return run_commit(spec)
    if job == "compact":
        return compact_job(spec, execute=_rewrite)
    raise ValueError(f"the local runner runs {', '.join(DAG_RUN)}, not {job}")


def from_files(job: str, spec: JobSpec) -> Wire:
    """``in_process``, assign-and-write reading its source's parquet file (``spec.source["path"]``) as the Spark
    source would, the row kind column (if any) as the row kinds."""
    if job != "assign_and_write":
        return in_process(job, spec)
    import pyarrow.parquet as pq

    rows, kinds = pq.read_table(spec.source["path"]), None
    if spec.row_kind_column:
        kinds = row_kinds_of(rows.column(spec.row_kind_column), identifier=spec.table, column=spec.row_kind_column)
        rows = rows.drop_columns([spec.row_kind_column])
    return in_process(job, spec, rows=rows, row_kinds=kinds)


class LocalWriteTasks:
    """engine/runs/assign_and_write.py WriteTasks in this process: ``rows`` (row kinds ``row_kinds``, default all
    +I) as the source; ``write``: instead of the in-process pipeline (``_assign_then_write``)."""

    def __init__(self, rows: pa.Table, row_kinds=None, write=None):
        self.rows, self.index_tasks = rows, LocalIndexTasks()
        self._read, self._write = _prepared(rows, row_kinds), write or _assign_then_write

    def source_schema(self) -> pa.Schema:
        return self.rows.schema

    def read(self, table, row_kind_column, absent):
        return self._read(table, row_kind_column, absent)

    def leave_out(self, source, found):
        return left_out_arrow(source, found)

    def write(self, source, ctx, shape):
        return self._write(source, ctx, shape)


class LocalIndexTasks:
    """engine/runs/bootstrap_index.py IndexTasks, in this process."""

    parallelism = 1

    def rebuild(self, build, parts: int):
        return [meta for part in range(parts) for meta in build(part)]

    def catch_up(self, read_file, files: int, apply, shards: int):
        rows = pa.concat_tables([read_file(i) for i in range(files)])
        return [apply(shard, shard_rows) for shard, shard_rows in shards_in(rows)]


def _rewrite(table, work) -> list[bytes]:
    """The compaction's bucket rewrites, one after another (Spark: a task each)."""
    return [compact_task(table, w) for w in work]


def _prepared(rows: pa.Table, row_kinds):
    """The engine's read: the rows with their key, arrival order and row kind columns; the table columns
    ``absent`` (another writer added them after the run planned) as nulls, as spark/source.py does."""
    def read(table, row_kind_column, absent=()):
        n = rows.num_rows
        kinds = np.zeros(n, np.int8) if row_kinds is None else row_kinds
        typed = {f.name: f.type for f in PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)}
        out = rows
        for name in absent:
            out = out.append_column(pa.field(name, typed[name]), pa.nulls(n, typed[name]))
        return (out.append_column(ORDER, pa.array(np.arange(n), pa.int64()))
                .append_column(ROW_KIND, pa.array(kinds, pa.int8())))
    return read


def _fixed_buckets(source: pa.Table, ctx: WriteContext) -> pa.Table:
    """The bucket key's hash, as spark/pipelines/fixed.py."""
    return source.append_column(BUCKET, pa.array(fixed_buckets(ctx.table(), source), pa.int32()))


def _cross_partition(source: pa.Table, ctx: WriteContext) -> list[dict]:
    """Assigned per shard against the index and written, as spark/pipelines/cross_partition.py with one task."""
    with WriteBuffer(ctx.primary_keys, ctx.shards, ctx.write_buffer_bytes) as buffer:
        return list(assign_and_write_shards(ctx, buffer.extend(source.to_batches()), lambda rows: _write(rows, ctx)))


def _dynamic_buckets(source: pa.Table, ctx: WriteContext) -> pa.Table:
    """One assigner against the HASH index, rows in arrival order, as spark/pipelines/dynamic.py with one shard."""
    from airflow_paimon.engine.assign.dynamic import HashBucketAssigner

    rows = source.take(pc.sort_indices(source.column(ORDER)))
    buckets = HashBucketAssigner(ctx.table(), ctx.base_snapshot()).assign(rows)
    return rows.append_column(BUCKET, pa.array(buckets, pa.int32()))


ASSIGNERS = {HASH_FIXED.name: _fixed_buckets, HASH_DYNAMIC.name: _dynamic_buckets}  # by shape, as PIPELINES


def _assign_then_write(source: pa.Table, ctx: WriteContext, shape: TableShape) -> list[dict]:
    """The shape's assignment, as the Spark pipelines do it; then write per (partition, bucket)."""
    if shape.name == CROSS_PARTITION.name:
        return _cross_partition(source, ctx)
    if shape.name not in ASSIGNERS:
        raise NotImplementedError(f"the local runner writes {', '.join([*ASSIGNERS, CROSS_PARTITION.name])} "
                                  f"tables, not {shape.name}")
    return _write(ASSIGNERS[shape.name](source, ctx), ctx)


def _write(assigned: pa.Table, ctx: WriteContext) -> list[dict]:
    """One write task per (partition, bucket) of ``assigned``."""
    written = []
    for group in assigned.group_by(ctx.partition_keys + [BUCKET]).aggregate([]).to_pylist():
        mask = None
        for k, v in group.items():
            m = pc.equal(assigned.column(k), v) if v is not None else pc.is_null(assigned.column(k))
            mask = m if mask is None else pc.and_(mask, m)
        rows = assigned.filter(mask)
        message, counters = write_task(ctx, rows)
        written.append({"message": message, **counters, "rows_in": rows.num_rows})
    return written


# --- one run in memory, step by step ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Bootstrapped:
    """A run after its bootstrap-index job: what the next jobs are built from."""

    pipeline: Pipeline
    result: BootstrapResult

    @property
    def base_snapshot_id(self) -> int | None:
        return self.result.base_snapshot_id

    @property
    def index_uri(self) -> str | None:
        return self.result.index_uri

    @property
    def shards(self) -> int:
        return self.result.shards

    @property
    def staging_root(self) -> str:
        return self.pipeline.staging_root


def local_pipeline(catalog_options, table: str, index_root: str, shards: int) -> Pipeline:
    """In process, the index under ``index_root`` and staging next to it."""
    return Pipeline(catalog_options, table, shards=shards, index_root=index_root,
                    staging_root=index_root.rstrip("/").rsplit("/", 1)[0] + "/staging")


def bootstrap_result(catalog_options, table: str, index_root: str, shards: int) -> BootstrapResult:
    """The bootstrap-index job."""
    p = local_pipeline(catalog_options, table, index_root, shards)
    return in_process("bootstrap_index", p.spec("bootstrap_index", {}))


def bootstrap(catalog_options, table: str, index_root: str, shards: int) -> Bootstrapped:
    """The bootstrap-index job; the run the next jobs continue."""
    p = local_pipeline(catalog_options, table, index_root, shards)
    return Bootstrapped(p, in_process("bootstrap_index", p.spec("bootstrap_index", {})))


def clock_at(as_of_ms: int, run_id: str = "run", dag_id: str = "test", run_type: str = "scheduled",
             as_of_from: str = "data_interval_end", write_order: str = "as_of") -> dict:
    """A DAG run's clock (engine/commit/properties.py RunClock) as the operators put it in the spec."""
    return RunClock(as_of_ms=as_of_ms, as_of_from=as_of_from, write_order=write_order, dag_id=dag_id,
                    run_id=run_id, run_type=run_type).to_dict()


def write_run(run: Bootstrapped, source: pa.Table, run_id: str = "run", row_kinds=None,
              write_mode: str = "upsert", schema_evolution: str = "none", write=None,
              clock: dict | None = None) -> AssignWriteResult:
    """The assign-and-write job on ``source``; its result. ``write``: instead of the in-process pipeline;
    ``clock``: the DAG run's clock (``clock_at``; engine/commit/ordering.py)."""
    spec = run.pipeline.spec("assign_and_write", {"bootstrap_index": run.result.to_dict()}, run_id=run_id,
                             write_mode=write_mode, schema_evolution=schema_evolution, clock=clock)
    return in_process("assign_and_write", spec, rows=source, row_kinds=row_kinds, write=write)


def stage_run(run: Bootstrapped, source: pa.Table, run_id: str = "run", row_kinds=None,
              write_mode: str = "upsert", schema_evolution: str = "none",
              clock: dict | None = None) -> CommitSpec:
    """The assign-and-write job on ``source`` (row kinds: ``row_kinds``, default all +I); returns the commit
    job's spec."""
    written = write_run(run, source, run_id, row_kinds, write_mode, schema_evolution, clock=clock)
    return run.pipeline.spec("commit", {"assign_and_write": written.to_dict()})


def upsert(run: Bootstrapped, source: pa.Table, run_id: str = "run", row_kinds=None, write_mode: str = "upsert",
           schema_evolution: str = "none", clock: dict | None = None):
    """Stage and commit one run; (snapshot id, already committed)."""
    result = in_process("commit", stage_run(run, source, run_id, row_kinds, write_mode, schema_evolution, clock))
    return result.snapshot_id, result.already_committed


def compact(table, run_id: str = "c", snapshot_id: int | None = None, **options) -> dict:
    """The compact job's engine run on the handle ``table`` (which may carry options the catalog's has not),
    at its latest snapshot or ``snapshot_id``; ``options``: full, scope, partition_filter."""
    snapshot_id = snapshot_id if snapshot_id is not None else latest_snapshot(table).id
    return run_compaction(table, compaction_identity("dag", run_id, table.identifier.get_full_name()), snapshot_id,
                          execute=lambda work: _rewrite(table, work), **options)
