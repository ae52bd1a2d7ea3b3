"""Compaction as an Airflow task: plan on the Spark driver, rewrite buckets in parallel Spark tasks, commit
one COMPACT snapshot. Chained after a PaimonCommitOperator (or given its ``.output``) it compacts that
commit's snapshot; alone (a nightly maintenance DAG) the table's latest snapshot."""
from __future__ import annotations

from collections.abc import Sequence

from airflow.sdk import XComArg
from airflow.sdk.exceptions import AirflowSkipException

from airflow_paimon.assets import TableAssetMixin
from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.jobs.specs import SCOPES, CommitResult, CompactResult, CompactSpec
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.job_env import steps
from airflow_paimon.job_env.step import run_step
from airflow_paimon.lineage import TableLineageMixin
from airflow_paimon.operators.spark_job import PaimonSparkJobOperator
from airflow_paimon.operators.write import PaimonCommitOperator, run_generation


class PaimonCompactOperator(TableAssetMixin, TableLineageMixin, PaimonSparkJobOperator):
    """Compact the table after this run's commit; returns ``{"table", "snapshot_id", "compacted_buckets",
    "files_before", "files_after", "already_committed"}`` where ``snapshot_id`` is the COMPACT snapshot, or the
    commit's snapshot when nothing needed compacting.

    - ``full`` (templated; "true"/"false" strings accepted): False → Paimon's universal compaction per
      bucket, steered by the table options ``num-sorted-run.compaction-trigger``,
      ``compaction.max-size-amplification-percent``, ``compaction.size-ratio`` (and ``num-levels``);
      True → full compaction: every bucket in scope becomes one sorted run at the max level, deleted rows
      dropped.
    - ``scope``: ``"snapshot"`` → only the buckets written since the table's last compaction (up to the
      commit's snapshot); ``"table"`` → every bucket. ``partition_filter`` (``{"dt": "2026-11-01"}``) narrows
      either. Templated.
    - ``every_n_runs`` (templated): compact only when at least N write snapshots have landed since the last COMPACT
      snapshot (counted on the table, so manual runs, backfills and failed runs count correctly). When not
      due the task is **skipped** (AirflowSkipException), like LatestOnlyOperator: the grid shows it, the DAG
      run still succeeds; a downstream task that must run anyway needs ``trigger_rule="none_failed"``. Tasks
      that need the snapshot ID should pull it from the commit task.
    - ``upstream_output``: the commit task's ``.output`` (its snapshot is compacted); without it, the nearest
      upstream commit task, else (standalone) the table's latest snapshot.

    - ``emit_asset`` (default True): the table's ``paimon://`` asset is an outlet; a COMPACT snapshot emits
      an asset event (``extra`` as PaimonCommitOperator's, ``base_snapshot_id`` the compacted snapshot). A
      compaction that was skipped or had nothing to compact emits none: no new snapshot to announce.

    Safe to retry: the COMPACT commit carries an identity derived from (dag_id, run_id, table) and the run's
    generation (its clear_number); a retry finds it and returns it (``already_committed: true``), a cleared run
    compacts anew. If a concurrent commit removed an input file the task
    fails, nothing is committed, and a re-run plans again.
    """

    job = "compact"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "partition_filter", "scope",
                                      "full", "every_n_runs", "upstream_output")

    def __init__(self, *, full: bool | str = False, scope: str = "snapshot", partition_filter: dict | None = None,
                 every_n_runs: int | str = 1, emit_asset: bool = True,
                 upstream_output: XComArg | dict | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.declare_table_asset(emit_asset)
        self.upstream_output = self.upstream_output_of(upstream_output, PaimonCommitOperator)
        if isinstance(every_n_runs, int) and every_n_runs < 1:
            raise ConfigError("every_n_runs must be at least 1")
        if scope not in SCOPES and "{{" not in scope:
            raise ConfigError(f"scope must be one of {SCOPES}")
        self.full, self.scope, self.partition_filter = full, scope, partition_filter
        self.every_n_runs = every_n_runs

    def job_spec(self, context, hook: PaimonHook) -> CompactSpec:
        committed = self.upstream_result(context, PaimonCommitOperator, required=False)
        # None: standalone (a maintenance DAG), the table as it is now
        snapshot_id = CommitResult.from_dict(committed).snapshot_id if committed is not None else None
        every = int(self.every_n_runs)  # templated: may arrive as a rendered string
        if every < 1:
            raise ConfigError(f"every_n_runs must be at least 1, got {every}")
        if committed is None or every > 1:  # table metadata, read on the job side
            found = run_step(steps.compact_writes, self.job_env(), catalog_options=hook.catalog_options(),
                             table=self.table, snapshot_id=snapshot_id, count_writes=every > 1)
            snapshot_id, writes = found["snapshot_id"], found["writes"]
        if every > 1:
            if writes < every:
                raise AirflowSkipException(f"{writes} write snapshot(s) of {self.table} since the last "
                                           f"compaction; compacting every {every}")
        dag_run = context["dag_run"]
        full = self.full if isinstance(self.full, bool) else str(self.full).strip().lower() in ("true", "1", "yes")
        return CompactSpec(**self.common_spec(hook), snapshot_id=snapshot_id, full=full, scope=self.scope,
                           partition_filter=self.partition_filter or None, dag_id=dag_run.dag_id,
                           run_id=dag_run.run_id, generation=run_generation(context))

    def decide_from_metadata(self, spec: dict) -> dict | None:
        """Nothing due, or this run's compaction committed by an earlier try: decided here from the snapshot
        and manifest files, without starting Spark (≈10 s of a spark-submit)."""
        return self._decided(lambda: run_step(steps.compact_decide, self.job_env(), spec=spec))

    def execute(self, context) -> dict:
        result = super().execute(context)
        compacted = CompactResult.from_dict(result)
        self.record_snapshot(context, compacted.snapshot_id, compacted.base_snapshot_id,
                             new=compacted.already_committed or compacted.compacted_buckets > 0)
        return result
