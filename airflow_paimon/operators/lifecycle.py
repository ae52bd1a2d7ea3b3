"""A table's lifecycle as Airflow tasks: create, alter, tag, roll back. No Spark: each is a job-side step
(airflow_paimon/job_env/steps.py: in the task process when it holds pypaimon, else in the job environment), and
each is idempotent — a retry, or a cleared
task run again in the same DAG run, finds its work done and changes nothing.

A refusal (a schema the table does not match, an option or column change not allowed, a tag name taken by
another snapshot) fails the task without retries, naming the table and the option, column or value.

DAG files import this module: it imports nothing heavy, and nothing of pypaimon ever.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from airflow.sdk import BaseOperator, XComArg

from airflow_paimon.engine.errors import ConfigError, ValidationError
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.job_env import steps
from airflow_paimon.job_env.step import run_step
from airflow_paimon.links import PaimonTableLink
from airflow_paimon.operators.spark_job import JobEnvMixin, retried_by_flag, templated_count
from airflow_paimon.operators.upstream import UpstreamResultMixin
from airflow_paimon.operators.write import PaimonCommitOperator


def _optional_int(table: str, name: str, value) -> int | None:
    """A templated snapshot id: None / "" / "None" mean not given."""
    return templated_count(table, name, value, what="a snapshot id")


class PaimonTableOperator(JobEnvMixin, BaseOperator):
    """Base: one table, one ``paimon`` connection; ``run`` does the work with the hook; an error a retry cannot
    help (its class's ``retryable``: a ValidationError, ...) fails the task at once (AirflowFailException).
    Where its step runs (JobEnvMixin): ``job_python`` (templated), else the extra ``job_python`` of the Spark
    connection ``spark_conn_id`` (default ``spark_default``; none need exist), else ``[paimon] job_python``."""

    template_fields: Sequence[str] = ("table", "job_python")
    ui_color = "#d7ecd9"
    operator_extra_links = (PaimonTableLink(),)

    def __init__(self, *, table: str, paimon_conn_id: str = PaimonHook.default_conn_name,
                 spark_conn_id: str = "spark_default", job_python: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        if "{{" not in table:
            validate_identifier(table)
        self.table, self.paimon_conn_id = table, paimon_conn_id
        self.spark_conn_id, self.job_python = spark_conn_id, job_python

    def run(self, context, hook: PaimonHook) -> dict:
        raise NotImplementedError

    def execute(self, context) -> dict:
        with retried_by_flag(self.task_id):
            validate_identifier(self.table)  # templated: checked once rendered
            result = self.run(context, PaimonHook(self.paimon_conn_id))
        self.log.info("%s: %s", self.table, json.dumps(result, sort_keys=True))
        return result


class PaimonCreateTableOperator(PaimonTableOperator):
    """Create ``table`` from ``table_schema`` (``{"columns": [[name, type], ...], "primary_keys": [...],
    "partition_keys": [...], "options": {...}}``, as PaimonBootstrapIndexOperator's); options are checked first.
    An existing table equal to the schema is success; a different one is refused (never altered: that is
    PaimonAlterTableOperator's job — after an ALTER, declare the altered schema here).

    Returns ``{"table", "created", "schema_id"}``."""

    template_fields: Sequence[str] = (*PaimonTableOperator.template_fields, "table_schema")

    def __init__(self, *, table_schema: dict, **kwargs) -> None:
        super().__init__(**kwargs)
        self.table_schema = table_schema

    def run(self, context, hook: PaimonHook) -> dict:
        return run_step(steps.create_table, self.job_env(), catalog_options=hook.catalog_options(), table=self.table,
                        table_schema=self.table_schema)


class PaimonAlterTableOperator(PaimonTableOperator):
    """ALTER ``table``: ``set_options`` ({name: value}), ``reset_options`` ([name]), ``add_columns`` ([[name,
    type]], nullable, added at the end), ``widen_columns`` ([[name, new type]]: INT → BIGINT, FLOAT → DOUBLE,
    VARCHAR(n) → VARCHAR(m > n) or STRING, DECIMAL(p, s) → DECIMAL(p' > p, s)). Never a drop, rename or
    narrowing; ``bucket``, ``bucket-key``, ``merge-engine``, ``sequence.field``, keys and Paimon's immutable
    options never change. The resulting option set is checked as a new table's would be, before anything is
    written. What the table already has is no change: a retry writes no new schema.

    Returns ``{"table", "schema_id", "changed", "changes"}`` (``changes``: what this run applied)."""

    template_fields: Sequence[str] = (*PaimonTableOperator.template_fields, "set_options", "reset_options",
                                      "add_columns", "widen_columns")

    def __init__(self, *, set_options: dict[str, Any] | None = None, reset_options: list[str] | None = None,
                 add_columns: list[list[str]] | None = None, widen_columns: list[list[str]] | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if not (set_options or reset_options or add_columns or widen_columns):
            raise ConfigError(f"{kwargs.get('task_id')}: nothing to alter; give set_options, reset_options, "
                              "add_columns or widen_columns")
        self.set_options, self.reset_options = set_options or {}, reset_options or []
        self.add_columns, self.widen_columns = add_columns or [], widen_columns or []

    def run(self, context, hook: PaimonHook) -> dict:
        for name, value, kind in (("set_options", self.set_options, dict), ("reset_options", self.reset_options, list),
                                  ("add_columns", self.add_columns, list), ("widen_columns", self.widen_columns, list)):
            if not isinstance(value, kind):  # a template rendered to text (render_template_as_native_obj unset)
                raise ValidationError(self.table, f"{name} must be a {kind.__name__}, not {type(value).__name__}",
                                      value=value)
        return run_step(steps.alter_table, self.job_env(), catalog_options=hook.catalog_options(), table=self.table,
                        set_options=self.set_options, reset_options=self.reset_options,
                        add_columns=self.add_columns, widen_columns=self.widen_columns)


class PaimonCreateTagOperator(UpstreamResultMixin, PaimonTableOperator):
    """Tag a snapshot of ``table`` as ``tag`` (templated, default the run's ``{{ ds }}``): ``snapshot_id`` when
    given, else the snapshot this DAG run committed (the XCom of ``upstream_output``, else of the nearest
    upstream PaimonCommitOperator), else the latest. The tag is Paimon's (``<table>/tag/tag-<name>``): Paimon
    readers time-travel to it, and snapshot expiry keeps the files it needs.

    A retry finds the tag: on the same snapshot it is success (``created: false``); the name on another
    snapshot is refused, naming both. Returns ``{"table", "tag", "snapshot_id", "created"}``."""

    template_fields: Sequence[str] = (*PaimonTableOperator.template_fields, "tag", "snapshot_id", "upstream_output")

    def __init__(self, *, tag: str = "{{ ds }}", snapshot_id: int | str | None = None,
                 upstream_output: XComArg | dict | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tag, self.snapshot_id = tag, snapshot_id
        self.upstream_output = self.upstream_output_of(upstream_output, PaimonCommitOperator)

    def run(self, context, hook: PaimonHook) -> dict:
        snapshot_id = _optional_int(self.table, "snapshot_id", self.snapshot_id)
        fingerprint = None
        if snapshot_id is None:
            committed = self.upstream_result(context, PaimonCommitOperator, required=False) or {}
            # None: nothing was committed (a run without new rows), and the latest is tagged
            snapshot_id = _optional_int(self.table, "snapshot_id", committed.get("snapshot_id"))
            fingerprint = committed.get("snapshot_fingerprint")  # that very snapshot, not one reusing its id
        return run_step(steps.create_tag, self.job_env(), catalog_options=hook.catalog_options(), table=self.table,
                        tag=self.tag, snapshot_id=snapshot_id, fingerprint=fingerprint)


class PaimonRollbackOperator(PaimonTableOperator):
    """Roll ``table`` back to ``to_snapshot`` or ``to_tag`` (templated; exactly one): later snapshots, their
    tags and the global key index of later snapshots are deleted, so the table reads as it did then and the
    next write bootstraps from the target (engine/maintenance/rollback.py). Pause the table's writers meanwhile.

    Exactly once per DAG run: a retry finishes an interrupted rollback; once done, a marker under the results
    root makes a cleared task that runs again in the same DAG run report the rollback it did instead of
    deleting what was committed since. Returns ``{"table", "snapshot_id", "deleted_snapshots", "deleted_tags",
    "deleted_index_snapshots", "already_rolled_back"}``."""

    template_fields: Sequence[str] = (*PaimonTableOperator.template_fields, "to_snapshot", "to_tag")

    def __init__(self, *, to_snapshot: int | str | None = None, to_tag: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        if (to_snapshot is None) == (to_tag is None):
            raise ConfigError(f"{kwargs.get('task_id')}: give exactly one of to_snapshot and to_tag")
        self.to_snapshot, self.to_tag = to_snapshot, to_tag

    def marker(self, context, hook: PaimonHook) -> str:
        from airflow_paimon.engine.files import layout

        ti = context["ti"]
        return layout.rollback_marker(hook.results_root(), ti.dag_id, ti.run_id, ti.task_id, ti.map_index)

    def run(self, context, hook: PaimonHook) -> dict:
        from airflow_paimon.engine.files import storage

        storage.configure(hook.catalog_options())
        marker = self.marker(context, hook)
        if storage.exists(marker):
            done = json.loads(storage.read_bytes(marker))
            self.log.info("%s was rolled back to snapshot %s by this DAG run already", self.table,
                          done["snapshot_id"])
            return {**done, "already_rolled_back": True}
        to_tag = self.to_tag if self.to_tag not in (None, "", "None") else None
        to_snapshot = _optional_int(self.table, "to_snapshot", self.to_snapshot) if to_tag is None else None
        result = run_step(steps.rollback, self.job_env(), catalog_options=hook.catalog_options(), table=self.table,
                          index_root=hook.index_root(), to_snapshot=to_snapshot, to_tag=to_tag)
        storage.write_bytes_atomic(marker, json.dumps(result).encode())
        return {**result, "already_rolled_back": False}


class PaimonExpirePartitionsOperator(PaimonTableOperator):
    """Drop the partitions of ``table`` that are older than the table's ``partition.expiration-time`` (or
    ``expiration_time``, a Paimon duration such as ``"30 d"``), as Paimon's partition expiry does: a partition's
    time is read from its values (``partition.timestamp-pattern``, ``partition.timestamp-formatter``) and it
    expires when that time is before ``now - expiration time``. ``now`` (templated) defaults to the DAG run's
    data interval end, else its logical date, else the current time (UTC): a backfilled run expires what the
    scheduled one would have. All expired partitions go in one OVERWRITE snapshot, exactly once per DAG run (a
    retry finds it); the next bootstrap-index rebuilds the key index. ``dry_run`` lists them and commits nothing.

    Returns ``{"table", "snapshot_id", "expired_partitions", "already_committed", "dry_run"}``."""

    template_fields: Sequence[str] = (*PaimonTableOperator.template_fields, "now", "expiration_time")

    def __init__(self, *, now: str | None = None, expiration_time: str | None = None, dry_run: bool = False,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.now, self.expiration_time = now, expiration_time
        self.dry_run_only = dry_run  # not self.dry_run: that is BaseOperator's dry_run() method

    def run(self, context, hook: PaimonHook) -> dict:
        import pendulum

        now: datetime
        if self.now not in (None, "", "None"):
            try:
                parsed = pendulum.parse(str(self.now))
            except Exception:  # noqa: BLE001 - pendulum raises several types
                raise ValidationError(self.table, "now must be a date or timestamp", value=self.now) from None
            if not isinstance(parsed, datetime):  # a duration or a time of day
                raise ValidationError(self.table, "now must be a date or timestamp", value=self.now)
            now = parsed
        else:
            now = context.get("data_interval_end") or context.get("logical_date") or pendulum.now("UTC")
        now = pendulum.instance(now).in_timezone("UTC").naive() if now.tzinfo else now
        expiration = None if self.expiration_time in (None, "", "None") else str(self.expiration_time)
        ti = context["ti"]
        return run_step(steps.expire_partitions, self.job_env(), catalog_options=hook.catalog_options(),
                        table=self.table, dag_id=ti.dag_id, run_id=ti.run_id, now=now.isoformat(),
                        expiration_time=expiration, dry_run=bool(self.dry_run_only))
