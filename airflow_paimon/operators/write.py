"""The write as Airflow tasks: bootstrap-index → assign-and-write → commit, each a Spark job
(operators/spark_job.py). Each reads what it needs from its upstream task's XCom (operators/upstream.py); the
commit writes the run's batch again when the table moved under it (``max_rewrites``, operators/rewrite.py).

DAG files import these through operators/paimon.py; nothing heavy is imported here."""
from __future__ import annotations

from collections.abc import Sequence

from airflow.sdk import XComArg

from airflow_paimon.assets import TableAssetMixin
from airflow_paimon.engine.commit.properties import WRITE_ORDERS
from airflow_paimon.engine.errors import ConfigError, ValidationError
from airflow_paimon.engine.jobs.specs import (ASSIGN_WRITE_COUNTERS, REPROCESS_ON_CLEAR, SCHEMA_EVOLUTIONS,
                                         AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitResult, CommitSpec, source_spec)
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.lineage import DatasetRef, TableLineageMixin, source_dataset
from airflow_paimon.operators.clock import run_clock
from airflow_paimon.operators.rewrite import StaleWriteError, write_again
from airflow_paimon.operators.spark_job import PUBLIC_MODULE, PaimonSparkJobOperator, templated_count


def run_generation(context) -> int:
    """The DAG run's generation: how often it was cleared (Airflow's ``DagRun.clear_number``; None is 0). Part of
    the run's commit identities (engine/commit/identity.py)."""
    return int(getattr(context["dag_run"], "clear_number", None) or 0)


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    """An argument with a fixed set of values (``schema_evolution``, ``reprocess_on_clear``), checked when the DAG
    is parsed."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_schema_evolution(value: str) -> str:
    """``schema_evolution`` checked when the DAG is parsed."""
    return check_choice("schema_evolution", value, SCHEMA_EVOLUTIONS)


class PaimonBootstrapIndexOperator(PaimonSparkJobOperator):
    """At the table's latest snapshot, build (or reuse) the global key index; creates the table from
    ``table_schema`` (columns, primary_keys, partition_keys, options) if it does not exist.
    ``schema_evolution``: ``"none"`` (default: an existing table that differs from ``table_schema`` is an
    error), ``"add_columns"`` (declared columns the table lacks are added, nullable, at the end) or ``"widen"``
    (also declared wider types: INT → BIGINT, FLOAT → DOUBLE, VARCHAR(n) → VARCHAR(m > n) / STRING,
    DECIMAL(p, s) → DECIMAL(q > p, s)). Never a drop, rename, narrowing or key change."""

    __module__ = PUBLIC_MODULE
    job = "bootstrap_index"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "table_schema", "shards")
    template_fields_renderers = {**PaimonSparkJobOperator.template_fields_renderers, "table_schema": "json"}

    def __init__(self, *, table_schema: dict | None = None, shards: int | str = 4, schema_evolution: str = "none",
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if isinstance(shards, int) and shards < 1:  # a template is checked when rendered
            raise ConfigError("shards must be at least 1")
        self.table_schema = table_schema
        self.shards = shards
        self.schema_evolution = check_schema_evolution(schema_evolution)

    def job_spec(self, context, hook: PaimonHook) -> BootstrapSpec:
        shards = templated_count(self.table, "shards", self.shards)
        if shards is None:
            raise ValidationError(self.table, "shards must be given", value=self.shards)
        return BootstrapSpec(**self.common_spec(hook), table_spec=self.table_schema, shards=shards,
                             index_root=hook.index_root(), schema_evolution=self.schema_evolution)

    def decide_from_metadata(self, spec: dict) -> dict | None:
        """An index of the latest snapshot to reuse, or a table that needs none (fixed buckets, dynamic buckets):
        decided here from the snapshot files and the index manifest, without starting Spark (≈9 s of a
        spark-submit)."""
        from airflow_paimon.job_env import steps
        from airflow_paimon.job_env.step import run_step

        return self._decided(lambda: run_step(steps.bootstrap_decide, self.job_env(), spec=spec))


class PaimonAssignAndWriteOperator(TableLineageMixin, PaimonSparkJobOperator):
    """Read and validate the source, assign every row a bucket against the index, write data files, stage
    the commit messages. Nothing becomes visible until the commit task.

    ``source``: a path (parquet / CSV / JSON, format from the extension or ``source_format``), or
    ``{"query": "..."}`` / ``{"table": "..."}`` for a Spark SQL query or table. Templated.
    ``row_kind_column``: a source column holding each row's operation (+I, -U, +U, -D); without it every
    row is an upsert (+I). Defaults to the table option ``rowkind.field`` when that is set.
    ``write_mode``: ``"upsert"`` (default) or ``"overwrite"``: the partitions the batch writes rows into are
    replaced by it in one OVERWRITE snapshot (dynamic partition overwrite, for backfills; cross-partition and
    fixed-bucket tables; see engine/commit/overwrite.py). Templated.
    ``schema_evolution``: ``"none"`` (default: a source column the table lacks is an error), ``"add_columns"``
    (it is added to the table as a nullable column at the end, typed from the source; older rows read null)
    or ``"widen"`` (also a value column whose source type is wider: INT → BIGINT, FLOAT → DOUBLE, DECIMAL
    precision up). One new table schema before anything is written; never a drop, rename or narrowing.
    ``reprocess_on_clear``: what a DAG run cleared after its write committed does (Airflow's Clear of a finished
    run; each clear is a new generation of the run, ``dag_run.clear_number``, with a commit identity of its own):
    ``"upsert"`` (default) writes the source again into a ``deduplicate`` table (the rows replace the earlier
    ones) and refuses other merge engines, where the earlier rows would count twice (aggregation, partial-update)
    or stay (first-row); ``"always"`` writes it again whatever the merge engine; ``"never"`` writes nothing (the
    earlier commit stands). A retry of the same try writes nothing either way (exactly once).
    ``write_order``: how this run's rows are ordered among other runs' in a ``deduplicate`` table without
    ``sequence.field`` (docs/backfills-and-reruns.md): ``"as_of"`` (default) leaves out the rows of keys that runs
    whose data is as of a later instant (the end of their data interval, else their logical date, else their
    ``run_after``; operators/clock.py) wrote, so data as of an earlier instant never replaces newer data because it
    committed later — a WARNING names another DAG's run or a run of another run type yielded to; ``"commit"``
    leaves nothing out (Paimon's commit order: the last commit wins) and is not ordered against.
    ``upstream_output``: the bootstrap task's ``.output``; without it, the nearest upstream bootstrap task.
    """

    __module__ = PUBLIC_MODULE
    job = "assign_and_write"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "source", "source_format",
                                      "source_options", "row_kind_column", "write_mode", "upstream_output")
    template_fields_renderers = {**PaimonSparkJobOperator.template_fields_renderers, "source_options": "json"}

    def __init__(self, *, source: str | dict, source_format: str | None = None,
                 source_options: dict | None = None, row_kind_column: str | None = None,
                 write_mode: str = "upsert", schema_evolution: str = "none", reprocess_on_clear: str = "upsert",
                 write_order: str = "as_of", upstream_output: XComArg | dict | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.upstream_output = self.upstream_output_of(upstream_output, PaimonBootstrapIndexOperator)
        self.write_mode = write_mode
        self.schema_evolution = check_schema_evolution(schema_evolution)
        self.reprocess_on_clear = check_choice("reprocess_on_clear", reprocess_on_clear, REPROCESS_ON_CLEAR)
        self.write_order = check_choice("write_order", write_order, WRITE_ORDERS)
        self.row_kind_column = row_kind_column
        self.source = source
        self.source_format = source_format
        self.source_options = source_options or {}

    def job_spec(self, context, hook: PaimonHook) -> AssignWriteSpec:
        bootstrap = BootstrapResult.from_dict(self.upstream_result(context, PaimonBootstrapIndexOperator))
        dag_run = context["dag_run"]
        return AssignWriteSpec.after(bootstrap, **self.common_spec(hook),
                                     source=source_spec(self.source, self.source_format, self.source_options),
                                     staging_root=hook.staging_root(), dag_id=dag_run.dag_id, run_id=dag_run.run_id,
                                     row_kind_column=self.row_kind_column, write_mode=self.write_mode or "upsert",
                                     schema_evolution=self.schema_evolution, generation=run_generation(context),
                                     reprocess_on_clear=self.reprocess_on_clear,
                                     clock=run_clock(context, self.write_order))

    def lineage_inputs(self) -> list[DatasetRef]:
        source = source_dataset(self.source)
        return [source] if source else []


class PaimonCommitOperator(TableAssetMixin, TableLineageMixin, PaimonSparkJobOperator):
    """Commit the staged messages of this DAG run as one snapshot, exactly once. ``upstream_output``: the
    assign-and-write task's ``.output``; without it, the nearest upstream assign-and-write task.

    ``emit_asset`` (default True): the table's ``paimon://`` asset (airflow_paimon/assets.py) is an outlet,
    and the commit's asset event carries ``extra`` = {snapshot_id, base_snapshot_id, commit_kind,
    delta_record_count, total_record_count}; a retry that finds the commit done reports the same snapshot.
    A run that staged nothing commits no snapshot and emits no event.

    ``max_rewrites`` (default 3): when other writers' commits since the run's base conflict with its staged write
    (the same keys, a partition's bucket index, an overwrite; engine/commit/rebase.py), or the table was rolled
    back or changed its schema, the commit runs the run's bootstrap-index and assign-and-write again against the
    table as it is now (logged, counted in ``rewrites``) and commits that, up to this many times; 0: fail
    instead (the run is then cleared from bootstrap-index by hand)."""

    __module__ = PUBLIC_MODULE
    job = "commit"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "upstream_output")

    def __init__(self, *, emit_asset: bool = True, upstream_output: XComArg | dict | None = None,
                 max_rewrites: int = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        self.declare_table_asset(emit_asset)
        self.upstream_output = self.upstream_output_of(upstream_output, PaimonAssignAndWriteOperator)
        if max_rewrites < 0:
            raise ConfigError("max_rewrites must be at least 0")
        self.max_rewrites = max_rewrites

    def job_spec(self, context, hook: PaimonHook) -> CommitSpec:
        written = AssignWriteResult.from_dict(self.upstream_result(context, PaimonAssignAndWriteOperator))
        return CommitSpec.after(written, **self.common_spec(hook), staging_root=hook.staging_root(),
                                rewrites=self._rewrites)

    _rewrites = 0  # of this execution: the batch written again this many times (execute)

    def execute(self, context) -> dict:
        self._rewrites = 0
        while True:
            try:
                result = super().execute(context)
                break
            except StaleWriteError as e:
                if self._rewrites >= self.max_rewrites:
                    raise StaleWriteError(f"{e} (after {self._rewrites} rewrite(s) of this run's batch; "
                                          f"max_rewrites={self.max_rewrites})") from None
                self._rewrites += 1
                self.log.warning("%s; writing this run's batch again from bootstrap-index (rewrite %s of at most "
                                 "%s)", e, self._rewrites, self.max_rewrites)
                write_task = self.upstream_task(PaimonAssignAndWriteOperator)
                boot_task = write_task.upstream_task(PaimonBootstrapIndexOperator)
                self.continue_from(write_again(boot_task, write_task, context,
                                               f"{self.task_id}.rewrite-{self._rewrites}"))
        if self._rewrites:  # what landed is the last rewrite's write, not the one assign-and-write's XCom shows
            written = self.upstream_output if isinstance(self.upstream_output, dict) else {}
            result = {**result, "written": {k: written[k] for k in ASSIGN_WRITE_COUNTERS if k in written}}
        committed = CommitResult.from_dict(result)
        self.record_snapshot(context, committed.snapshot_id, committed.base_snapshot_id,
                             new=committed.snapshot_id != committed.base_snapshot_id)
        return result

