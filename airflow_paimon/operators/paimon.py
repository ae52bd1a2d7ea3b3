"""The write as Airflow tasks: bootstrap-index → assign-and-write → commit, each a Spark job.

Operators stay thin: build the job spec (the type spark/job_registry.py names for the operator's ``job``), run the
job through the backend of the Spark connection's type (operators/backends.py: spark-submit of
``spark_jobs/<job>.py``, or a Spark Connect client in the task process), read the result file the job wrote,
return it (it lands in XCom). Each reads what it needs from its upstream task's
XCom: the one passed as ``upstream_output`` (``write.output``), else the nearest upstream task of the right
class, so a DAG only chains them.

DAG files import this module: it imports nothing heavy (pypaimon, pyarrow, pyspark come with the job).
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from airflow.exceptions import AirflowException
from airflow.sdk import BaseOperator, XComArg
from airflow.sdk.exceptions import AirflowFailException

from airflow_paimon.assets import TableAssetMixin
from airflow_paimon.engine.commit.properties import WRITE_ORDERS
from airflow_paimon.engine.errors import ConfigError, ValidationError, is_retryable
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.spark.job_registry import JOBS, progress_line
from airflow_paimon.engine.specs import (ASSIGN_WRITE_COUNTERS, REPROCESS_ON_CLEAR, SCHEMA_EVOLUTIONS,
                                         AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitResult, CommitSpec, JobSpec, source_spec)
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.lineage import DatasetRef, TableLineageMixin, source_dataset, spark_openlineage_conf
from airflow_paimon.links import PaimonTableLink
from airflow_paimon.operators.clock import run_clock
from airflow_paimon.operators.rewrite import StaleWriteError, write_again

if TYPE_CHECKING:
    from airflow_paimon.job_env import JobEnv
    from airflow_paimon.operators.backends import JobBackend


@contextmanager
def retried_by_flag(what: str) -> Iterator[None]:
    """An error raised in the task process fails the task as its class declares (``retryable``, engine/errors.py):
    at once, without its retries (AirflowFailException, ``what: error``) when a retry cannot help; else as it is,
    for Airflow to retry."""
    try:
        yield
    except Exception as e:
        if is_retryable(e) or isinstance(e, AirflowFailException):  # already fails without retries, as it is
            raise
        raise AirflowFailException(f"{what}: {e}") from None


def templated_count(table: str, name: str, value, what: str = "a whole number") -> int | None:
    """A count or id argument that may be a template (rendered as text): None / "" / "None" mean not given."""
    if value in (None, "", "None"):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(table, f"{name} must be {what}", value=value) from None
    if number < 1:
        raise ValidationError(table, f"{name} must be at least 1", value=value)
    return number


def run_generation(context) -> int:
    """The DAG run's generation: how often it was cleared (Airflow's ``DagRun.clear_number``; None is 0). Part of
    the run's commit identities (engine/commit/identity.py)."""
    return int(getattr(context["dag_run"], "clear_number", None) or 0)


class UpstreamResultMixin:
    """How a task finds the result it continues from: the ``upstream_output`` it was given, else the XCom of
    the nearest upstream task of a given class. Needs ``task_id`` and ``table`` (an operator's)."""

    task_id: str  # the operator's
    table: str  # the operator's
    upstream_list: list  # the operator's upstream tasks
    dag: Any  # the operator's DAG

    # The result of the task this one continues from (an XComArg such as ``bootstrap.output``, or the dict);
    # set by the operators that take one, checked by upstream_output_of.
    upstream_output: XComArg | dict | None = None
    _upstream_task_id: str | None = None

    def upstream_output_of(self, output: XComArg | dict | None, operator_class: type) -> XComArg | dict | None:
        """``output`` checked at parse time: the XComArg of an ``operator_class`` task (Airflow makes that task
        upstream of this one), or its result dict."""
        if isinstance(output, XComArg):
            tasks = [task for task, _ in output.iter_references()]
            if len(tasks) != 1 or not isinstance(tasks[0], operator_class):
                raise ConfigError(f"{self.task_id} (table {self.table}): upstream_output must be the output of one "
                                  f"{operator_class.__name__}, got the output of "
                                  f"{', '.join(f'{t.task_id} ({type(t).__name__})' for t in tasks)}")
            self._upstream_task_id = tasks[0].task_id
        elif output is not None and not isinstance(output, dict):
            raise TypeError(f"{self.task_id} (table {self.table}): upstream_output must be an XComArg "
                            f"(e.g. bootstrap.output) or a result dict, not {type(output).__name__}")
        return output

    @overload
    def upstream_result(self, context, operator_class: type, required: Literal[True] = True) -> dict: ...
    @overload
    def upstream_result(self, context, operator_class: type, required: bool) -> dict | None: ...
    def upstream_result(self, context, operator_class: type, required: bool = True) -> dict | None:
        """The result this task continues from: ``upstream_output`` when given, else the XCom of the nearest
        upstream task of ``operator_class`` (the task it chains after); None when there is none and it is not
        ``required``. The result must be of this task's own table."""
        if self.upstream_output is not None:
            source, value = self._upstream_task_id or "(upstream_output)", self.upstream_output
        else:
            task = self._nearest_upstream(operator_class)
            if task is None:
                if not required:
                    return None
                raise AirflowFailException(
                    f"{self.task_id} (table {self.table}): no upstream {operator_class.__name__}; chain it after "
                    f"one or pass upstream_output=<that task>.output")
            source, value = task.task_id, context["ti"].xcom_pull(task_ids=task.task_id)
        if not value:
            raise AirflowException(f"{source} left no result in XCom for table {self.table}")
        if not isinstance(value, dict) or value.get("table") != self.table:
            upstream_table = value.get("table") if isinstance(value, dict) else repr(value)[:200]
            raise AirflowFailException(
                f"{self.task_id} writes table {self.table} but its upstream {source} is for table "
                f"{upstream_table}; chain each table's tasks together")
        return value

    def continue_from(self, result: dict) -> None:
        """Continue from ``result`` (an upstream task's result dict) instead of what ``upstream_output`` named."""
        self.upstream_output, self._upstream_task_id = result, None

    def upstream_task(self, operator_class: type[BaseOperator]) -> Any:
        """The task this one continues from: the one ``upstream_output`` names, else the nearest upstream task of
        ``operator_class``."""
        task = (self.dag.get_task(self._upstream_task_id) if self._upstream_task_id
                else self._nearest_upstream(operator_class))
        if task is None:
            raise AirflowFailException(f"{self.task_id} (table {self.table}): no upstream {operator_class.__name__}")
        return task

    def _nearest_upstream(self, operator_class: type[BaseOperator]) -> BaseOperator | None:
        seen: set[str] = set()
        frontier: list = list(self.upstream_list)
        while frontier:
            task = frontier.pop(0)
            if task.task_id in seen:
                continue
            seen.add(task.task_id)
            if isinstance(task, operator_class):
                return task
            frontier.extend(task.upstream_list)
        return None


class JobEnvMixin:
    """Where a task's job side runs (airflow_paimon/job_env): its argument ``job_python`` (an interpreter path,
    templated) wins over the extra ``job_python`` of its Spark connection ``spark_conn_id``, which wins over
    ``[paimon] job_python``; else the task's own interpreter, when it has the job side."""

    job_python: str | None  # the operator's
    spark_conn_id: str  # the operator's

    def job_env(self) -> JobEnv:
        """Where this task's job side runs, resolved now (its templates rendered)."""
        from airflow_paimon.job_env import resolve_job_env

        return resolve_job_env(self.job_python, self.spark_conn_id)


class PaimonSparkJobOperator(JobEnvMixin, UpstreamResultMixin, BaseOperator):
    """Base: submits one Spark job of ``spark_jobs/`` and returns the dict the job wrote as its result.
    ``job_python``: the job environment's interpreter for this task (JobEnvMixin), over the Spark connection's."""

    job: ClassVar[str]
    template_fields: Sequence[str] = ("table", "spark_conf", "paimon_conn_id", "spark_conn_id", "shuffle_partitions",
                                      "job_python")
    template_fields_renderers = {"spark_conf": "json"}
    ui_color = "#c9e7f5"
    operator_extra_links = (PaimonTableLink(),)

    def __init__(self, *, table: str, paimon_conn_id: str = PaimonHook.default_conn_name,
                 spark_conn_id: str = "spark_default", spark_conf: dict[str, Any] | None = None,
                 shuffle_partitions: int | None = None, spark_bin_dir: str | None = None,
                 openlineage_inject_parent_job_info: bool | None = None,
                 openlineage_inject_transport_info: bool | None = None, job_python: str | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.paimon_conn_id = paimon_conn_id
        self.spark_conn_id = spark_conn_id
        self.job_python = job_python
        self.spark_conf = spark_conf or {}
        self.shuffle_partitions = shuffle_partitions
        self.spark_bin_dir = spark_bin_dir  # where spark-submit is, when not next to this Python nor on PATH
        self._backend: JobBackend | None = None  # how the running job runs (operators/backends.py), for on_kill
        # As SparkSubmitOperator's flags; None: the [openlineage] spark_inject_* settings (lineage.py)
        self.openlineage_inject_parent_job_info = openlineage_inject_parent_job_info
        self.openlineage_inject_transport_info = openlineage_inject_transport_info

    def job_spec(self, context, hook: PaimonHook) -> JobSpec:
        raise NotImplementedError

    def common_spec(self, hook: PaimonHook) -> dict:
        """The JobSpec fields every job gets."""
        return {"catalog_options": hook.catalog_options(), "table": self.table,
                "shuffle_partitions": templated_count(self.table, "shuffle_partitions", self.shuffle_partitions)}

    def execute(self, context) -> dict:
        with retried_by_flag(f"{self.job} for table {self.table} failed"):
            return self._execute(context)

    def run_job(self, context, result_task_id: str | None = None) -> dict:
        """The job's result, run as this task does (its error raised as its class declares); ``result_task_id``:
        the name its result file goes by (default: this task's id)."""
        with retried_by_flag(f"{self.job} for table {self.table} failed"):
            return self._execute(context, result_task_id)

    def _execute(self, context, result_task_id: str | None = None) -> dict:
        """The job's result; ``result_task_id``: the name its result file goes by (default: this task's id)."""
        from airflow_paimon.engine import layout, storage

        validate_identifier(self.table)  # templated: checked here, before anything is submitted
        hook = PaimonHook(self.paimon_conn_id)
        storage.configure(hook.catalog_options())  # the result file is read with the connection's credentials
        spec = self.job_spec(context, hook)
        # the operator's job and its spec, as spark/job_registry.py pairs them
        if not isinstance(spec, JOBS[self.job].spec):
            raise TypeError(f"{type(self).__name__}.job_spec gave a {type(spec).__name__}, not the "
                            f"{JOBS[self.job].spec.__name__} of job {self.job}")
        raw = spec.to_dict()
        ti = context["ti"]
        result_uri = layout.result_file(hook.results_root(), ti.dag_id, ti.run_id, result_task_id or ti.task_id,
                                        ti.map_index, ti.try_number)
        started = time.monotonic()
        result = self.decide_from_metadata(raw)
        if result is None:
            self._submit(raw, result_uri, context)
            result = json.loads(storage.read_bytes(result_uri))
        self.log.info("%s", progress_line(self.job, result, time.monotonic() - started))  # the result, once
        return result

    def decide_from_metadata(self, spec: dict) -> dict | None:
        """The job's result when table metadata alone decides it (read in this process, no Spark job); None:
        there is work, submit the job. Default: always submit."""
        return None

    def _decided(self, decide) -> dict | None:
        """``decide()``'s result as a dict: an error a retry cannot help fails the task as the job's would; anything
        else (say, a store only the cluster reaches) leaves the decision to the job."""
        try:
            result = decide()
        except Exception as e:  # the Spark job decides (and reports) instead
            if not is_retryable(e):
                raise
            self.log.warning("%s: deciding from metadata failed (%s); submitting the job", self.table, e)
            return None
        return result  # a dict from job_env/steps.py, or None

    def _submit(self, spec: dict, result_uri: str, context=None) -> None:
        """Run the job through the backend of the Spark connection's type (operators/backends.py) and raise
        its error when it failed. Secret catalog options are masked in whatever the job prints."""
        from airflow.sdk.log import mask_secret

        from airflow_paimon.operators.backends import backend_for
        from airflow_paimon.spark.job_frame import secrets_of

        for secret in secrets_of(spec):
            mask_secret(secret)
        def openlineage_conf(conf: dict) -> dict:  # OpenLineage's parent job and transport, on spark-submit
            return spark_openlineage_conf(conf, context, self.openlineage_inject_parent_job_info,
                                          self.openlineage_inject_transport_info)

        self._backend = backend = backend_for(JOBS[self.job], self.table, self.spark_conn_id, self.job_env(),
                                              self.spark_conf, self.spark_bin_dir,
                                              openlineage_conf if context is not None else None)
        failure = backend.run(spec, result_uri)
        if failure is not None:
            self._job_failed(result_uri, failure)

    def _job_failed(self, result_uri: str, cause) -> None:
        """Raise the job's error (from its result file): without retries when the job says a retry cannot help
        (its ``retryable``); a job that wrote no error (a crash, a kill) is retried."""
        from airflow_paimon.engine import storage

        failed = json.loads(storage.read_bytes(result_uri)) if storage.exists(result_uri) else {}
        message = f"{self.job} for table {self.table} failed: {failed.get('error') or cause}"
        if failed.get("rewrite") is True:
            raise StaleWriteError(message) from None
        if failed.get("retryable") is False:
            raise AirflowFailException(message) from None
        raise AirflowException(message) from None

    def on_kill(self) -> None:
        """The task was killed: stop the Spark job through its backend (spark-submit: its process group, and on a
        cluster the driver there through the hook; Spark Connect: the session's operations on the server).
        Nothing is committed by a killed job."""
        if self._backend is not None:
            self._backend.kill()


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

