"""One assign-and-write, the same for every bucket mode and every executor (the Spark job, the tests' local
runner): find an earlier commit of this run, refuse what cannot be written, read the source, let the
executor assign and write it, stage the commit messages and their counters for the commit task. What the executor
does for it is one argument, its ``WriteTasks``.

A run's commit identity includes its generation (the DAG run's clear_number, engine/commit/identity.py): a retry
of the same generation finds its commit and writes nothing; a run cleared after an earlier generation committed
is a reprocess, which ``reprocess_on_clear`` decides (specs.REPROCESS_ON_CLEAR)."""
from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.commit.committer import find_commit, find_commits
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.ordering import Superseding, report, superseding
from airflow_paimon.engine.commit.properties import RunClock
from airflow_paimon.engine.commit.record import RecordedCommit
from airflow_paimon.engine.commit.overwrite import WRITE_MODES
from airflow_paimon.engine.commit.staging import Staged, stage
from airflow_paimon.engine.commit.table_state import planned_state
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.errors import IndexGoneError, RolledBackError, StaleIndexError, ValidationError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.snapshot.history import check_base, fingerprint, first_of_commit
from airflow_paimon.engine.index.store import staged_shards
from airflow_paimon.engine.merge.merge_engine import MergeEngine, MergeRules
from airflow_paimon.engine.runs.bootstrap_index import IndexTasks, index_at_latest
from airflow_paimon.engine.table.schema_evolution import evolve_for_source
from airflow_paimon.engine.assign.shapes import TableShape, shape_of, shapes_taking
from airflow_paimon.engine.jobs.specs import REPROCESS_ON_CLEAR, AssignWriteResult, AssignWriteSpec
from airflow_paimon.engine.table.table import get_table
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.options.checks import check_table
from airflow_paimon.engine.write import planned_columns
from airflow_paimon.engine.files.deletion_vectors import check_no_level_0

if TYPE_CHECKING:
    import pyarrow as pa
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

# What a write task reports for one (partition, bucket): its encoded CommitMessage and counters
Written = Mapping[str, Any]  # message, rows_written, deletes, files, rows_in
WRITE_COUNTERS = ("rows_written", "deletes", "files")


class WriteTasks(Protocol):
    """What an executor does for one assign-and-write, the engine's one way into it (Spark: spark/assign_write.py
    SparkWriteTasks; in-process: tests/local_runner.py LocalWriteTasks). ``source`` is the executor's own (a
    DataFrame, an Arrow table): the engine only hands it back."""

    @property
    def index_tasks(self) -> IndexTasks:
        """The executor's bootstrap tasks (engine/runs/bootstrap_index.py), for a run whose base index is gone
        (``bootstrap_again``)."""

    def source_schema(self) -> pa.Schema:
        """The source's Arrow schema, for schema evolution (asked for only when evolving)."""

    def read(self, table: FileStoreTable, row_kind_column: str | None, absent: tuple[str, ...]) -> Any:
        """The validated source, with the table columns ``absent`` (added by another writer since this run
        planned: engine/table/schema_evolution.py) as nulls."""

    def leave_out(self, source: Any, found: Superseding) -> tuple[Any, dict[int, int]]:
        """``source`` without the rows ``found`` (engine/commit/ordering.py: what runs as of a later instant
        wrote) supersedes, and {snapshot id: distinct keys left out for it}."""

    def write(self, source: Any, ctx: WriteContext, shape: TableShape) -> Sequence[Written]:
        """Assign and write ``source`` (the executor's pipeline for ``shape.name``), one Written per write
        task."""


def assign_and_write(spec: AssignWriteSpec, tasks: WriteTasks) -> AssignWriteResult:
    """The run's source, read, assigned and written by the executor's ``tasks``, staged for the commit task.
    Nothing is staged before all succeeded."""
    identifier = spec.table
    table = get_table(spec.catalog_options, identifier)
    shape = shape_of(table)
    ident = CommitIdentity.for_run(spec.dag_id, spec.run_id, identifier, spec.generation)
    staged_at = layout.staging_dir(spec.staging_root, identifier, ident.commit_user)
    result: dict[str, Any] = {
        "table": identifier, "base_snapshot_id": spec.base_snapshot_id, "commit_user": ident.commit_user,
        "commit_identifier": ident.commit_identifier, "staging_uri": staged_at,
        "base_snapshot_fingerprint": spec.base_snapshot_fingerprint, "generation": spec.generation}

    done = find_commit(table, ident.commit_user, ident.commit_identifier, spec.base_snapshot_id, recorded=True)
    if done is not None:  # a retry after this run already committed: write nothing again
        log.info("run already committed as snapshot %s%s; nothing to write", done.id,
                 " (expired since, by its commit record)" if isinstance(done, RecordedCommit) else "")
        return AssignWriteResult(**result, rows_in=0, rows_written=0, deletes=0, moved_keys=0, files=0,
                                 already_committed=True)
    earlier = earlier_commit(table, spec) if spec.generation else None
    if earlier is not None:  # a cleared run whose write committed before: write again, or not, or refuse
        kept = reprocess(table, spec, *earlier)
        if kept is not None:
            return kept
        result["reprocessed_snapshot_id"] = earlier[0].id
    check_table(table)  # its own options, maybe set by another engine since the bootstrap
    try:
        # the base must still be the snapshot bootstrap-index read: after a rollback its id may name another one
        check_base(table, spec.base_snapshot_id, spec.base_snapshot_fingerprint)
        shards = shape.write_shards(table, spec)
    except (RolledBackError, IndexGoneError) as gone:  # the base or its index went since the bootstrap, before
        # anything of the run was staged: the run's base moves to the latest snapshot
        spec = bootstrap_again(table, spec, tasks.index_tasks, gone)
        result.update(base_snapshot_id=spec.base_snapshot_id, base_snapshot_fingerprint=spec.base_snapshot_fingerprint)
        shards = shape.write_shards(table, spec)
    write_mode = check_write_mode(table, identifier, shape, spec.write_mode or "upsert")
    planned = planned_columns.start_clean(staged_at)  # a retried attempt starts clean; nothing here is committed yet
    # a new schema, if any, before anything is staged
    table, absent = evolve_for_source(spec, table, tasks.source_schema, planned,
                                      lambda columns: planned_columns.record(staged_at, columns))
    source = tasks.read(table, spec.row_kind_column or TableOptions.of(table).row_kind_field, absent)
    clock = RunClock.from_dict(spec.clock)
    found = superseding(table, clock) if write_mode != "overwrite" else None
    superseded: dict[str, Any] = {}
    if found is not None and clock is not None:
        source, left = tasks.leave_out(source, found)
        superseded = report(identifier, clock, found, left)
    ctx = WriteContext.plan(spec, table, shape, shards, staged_at, write_mode)
    if ctx.deletion_vectors:
        check_no_level_0(identifier, (f.level for files in ctx.bucket_files.values() for f in files))

    written = tasks.write(source, ctx, shape)
    messages = [bytes(w["message"]) for w in written]
    crash_point("assign_write.before_stage")
    shard_counters = [d["counters"] for d in staged_shards(staged_at).values()]
    # every input row reaches one assign task (merged there) or one write task
    rows_in = (sum(c.get("rows_in", 0) for c in shard_counters) if shape.merged_upstream
               else sum(w["rows_in"] for w in written))
    counters = {"rows_in": rows_in, **{k: sum(w[k] for w in written) for k in WRITE_COUNTERS},
                "moved_keys": sum(c.get("moved_keys", 0) for c in shard_counters),
                "new_keys": (sum(c.get("new_keys", 0) for c in shard_counters)
                             if shape.needs_index else None)}
    stage(table, staged_at, Staged(identifier, spec.base_snapshot_id, ident.commit_user, ident.commit_identifier,
                                   [], extra={**counters, "index_uri": spec.index_uri, "write_mode": write_mode,
                                              "clock": spec.clock, "run": {"dag_id": spec.dag_id,
                                                                           "run_id": spec.run_id,
                                                                           "generation": spec.generation}},
                                   base_snapshot_fingerprint=spec.base_snapshot_fingerprint,
                                   planned=planned_state(table)), messages)
    crash_point("assign_write.after_stage")
    log.debug("staged %s commit messages for %s at %s", len(messages), identifier, staged_at)
    return AssignWriteResult(**result, **counters, already_committed=False, **superseded)


def bootstrap_again(table: FileStoreTable, spec: AssignWriteSpec, tasks: IndexTasks | None,
                    gone: StaleIndexError) -> AssignWriteSpec:
    """``spec`` against a new bootstrap at the latest snapshot: for a run whose base left the table's history
    (RolledBackError: a rollback below it, an expiry) or whose base index was cleaned up after newer ones were
    published (IndexGoneError, engine/index/store.py clean_up), before anything of it was staged. What a rewrite in
    the commit task would do (bootstrap-index and assign-and-write again), done here, so the run lands without a
    person: the index of the latest snapshot reused, caught up or rebuilt by the bootstrap's own code
    (engine/runs/bootstrap_index.py); a table without a global index just takes the latest snapshot as its base.
    Its staging and commit then name the new base; a retry of this task, from the same bootstrap result, bootstraps
    again. ``gone`` is raised as it is when the executor runs no bootstrap tasks."""
    if not spec.index_uri:
        latest = table.snapshot_manager().get_latest_snapshot()
        new_base, fingerprint_of, how = (latest.id if latest else None), fingerprint(latest), "no index to build"
    else:
        if tasks is None:
            raise gone
        boot = index_at_latest(table, spec.table, spec.index_uri, spec.shards, tasks)
        assert boot is not None  # None only without tasks
        new_base, fingerprint_of = boot.base_snapshot_id, boot.base_snapshot_fingerprint
        how = f"index {boot.index_decision}: {boot.reason}"
        spec = dataclasses.replace(spec, index_uri=boot.index_uri)
    log.warning("table %s: the base this run's bootstrap-index returned, snapshot %s, is gone (%s: %s); bootstrapped "
                "again at snapshot %s (%s) and writing against that", spec.table, spec.base_snapshot_id,
                type(gone).__name__, gone, new_base, how)
    return dataclasses.replace(spec, base_snapshot_id=new_base, base_snapshot_fingerprint=fingerprint_of)


def earlier_commit(table: FileStoreTable, spec: AssignWriteSpec):
    """(snapshot, generation) of the latest commit an earlier generation of this run made, or None. The whole kept
    history is read: the cleared run's bootstrap-index ran after that commit; if that commit's snapshot expired
    since, its commit record (engine/commit/record.py) answers, as a RecordedCommit."""
    earlier = CommitIdentity.generations(spec.dag_id, spec.run_id, spec.table, spec.generation - 1)
    by_pair = {(i.commit_user, i.commit_identifier): g for i, g in earlier.items()}
    snap = find_commits(table, set(by_pair), None, recorded=True)
    return None if snap is None else (snap, by_pair[(snap.commit_user, snap.commit_identifier)])


def reprocess(table: FileStoreTable, spec: AssignWriteSpec, snap, generation: int) -> AssignWriteResult | None:
    """A cleared run (generation ``spec.generation``) whose generation ``generation`` committed ``snap``: None to
    write the source again (logged); the earlier generation's result when ``reprocess_on_clear`` is ``never``;
    a ValidationError (nothing staged, table unchanged) when writing again would not replace the earlier rows."""
    identifier, policy = spec.table, spec.reprocess_on_clear or "upsert"
    expired = " (expired since; found by its commit record)" if isinstance(snap, RecordedCommit) else ""
    what = (f"run {spec.run_id} of {spec.dag_id} was cleared (clear {spec.generation}); its write committed as "
            f"snapshot {snap.id}{expired}")
    if policy not in REPROCESS_ON_CLEAR:
        raise ValidationError(identifier, f"reprocess_on_clear must be one of {list(REPROCESS_ON_CLEAR)}",
                              value=policy)
    if policy == "never":
        log.info("%s; reprocess_on_clear='never': nothing to write", what)
        return kept_result(table, spec, snap, generation)
    rules = MergeRules.of(TableOptions.of(table))
    if policy == "upsert" and rules.engine is not MergeEngine.DEDUPLICATE:
        effect = "be ignored (the first row stays)" if rules.engine is MergeEngine.FIRST_ROW else "count twice"
        raise ValidationError(identifier, f"{what}; writing its source again into a table of this merge engine would "
                                          f"{effect}, so nothing was written. Set reprocess_on_clear='always' to "
                                          "write it again anyway, or 'never' to keep the earlier write",
                              option="merge-engine", value=rules.name)
    if spec.base_snapshot_id is None or snap.id > spec.base_snapshot_id:
        raise StaleIndexError(f"table {identifier}: {what}, after snapshot {spec.base_snapshot_id} this run's "
                              "bootstrap-index started from; nothing written, clear the run from bootstrap-index")
    log.info("%s; writing the source again (reprocess_on_clear=%r, merge-engine %s)", what, policy, rules.name)
    return None


def kept_result(table: FileStoreTable, spec: AssignWriteSpec, snap, generation: int) -> AssignWriteResult:
    """The result of a write that stands: the identity, staging and base of generation ``generation``'s commit
    ``snap``, so the commit task finds that snapshot and reports it (already committed). ``snap`` may be the
    commit's record (its snapshot expired): then the record's first snapshot id gives the base."""
    ident = CommitIdentity.for_run(spec.dag_id, spec.run_id, spec.table, generation)
    # a deletion-vector write is two snapshots of one identity
    first = first_of_commit(table, snap, snap.first_id if isinstance(snap, RecordedCommit) else None)
    return AssignWriteResult(table=spec.table, base_snapshot_id=first - 1 or None, commit_user=ident.commit_user,
                             commit_identifier=ident.commit_identifier,
                             staging_uri=layout.staging_dir(spec.staging_root, spec.table, ident.commit_user),
                             rows_in=0, rows_written=0, deletes=0, moved_keys=0, files=0, already_committed=True,
                             generation=spec.generation, reprocessed_snapshot_id=None)


def check_write_mode(table: FileStoreTable, identifier: str, shape: TableShape, write_mode: str) -> str:
    """``upsert`` for every shape; ``overwrite`` (dynamic partition overwrite) for partitioned tables of the
    shapes that take it."""
    if write_mode not in WRITE_MODES:
        raise ValidationError(identifier, f"write_mode must be one of {list(WRITE_MODES)}", value=write_mode)
    if write_mode == "overwrite" and not table.partition_keys:
        raise ValidationError(identifier, "write_mode 'overwrite' replaces partitions; the table has none",
                              value=write_mode)
    if write_mode not in shape.write_modes:
        taking = " and ".join(s.label for s in shapes_taking(write_mode))
        raise ValidationError(identifier, f"write_mode {write_mode!r} is supported for {taking} tables, "
                                          f"not {shape.name}", value=write_mode)
    return write_mode
