"""The job specs and results: what an operator hands a Spark job (as JSON in a private file, see
airflow_paimon/spark/job_frame.py) and what the job hands back (the result file; the operator returns it to XCom).

One dataclass per job and direction, shared by the operators, the jobs and the tests, so a key is named in
one place. ``from_dict`` refuses unknown and missing keys by name: a spec written by another version of the
operator fails before the job touches anything.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from airflow_paimon.engine.errors import PaimonJobError

T = TypeVar("T", bound="Wire")

# Operators import this module while a DAG file is parsed, so it imports nothing heavy (no pypaimon, pyarrow);
# the constants the operators check at parse time live here.
STAGING_RETENTION_SECONDS = 7 * 86400  # staging of a run that never committed is abandoned after this
SCOPES = ("snapshot", "table")  # what a compaction covers: the buckets written since the last one, or all
# What assign-and-write does in a DAG run cleared after its write committed (a new generation of the run,
# engine/commit/identity.py): write the source again where that replaces the earlier rows (deduplicate tables) and
# refuse elsewhere, write it again whatever the merge engine, or write nothing (the earlier commit stands)
REPROCESS_ON_CLEAR = ("upsert", "always", "never")
# What a write may change in the table's schema (engine/table/schema_evolution.py): nothing, add nullable columns,
# also widen column types
SCHEMA_EVOLUTIONS = ("none", "add_columns", "widen")
# Orphan removal's floor: no younger file is an orphan, whatever older_than says. A commit writes its manifests
# moments before its snapshot, a write or compaction its data files minutes before their commit (Paimon itself
# only refuses a cut-off in the future).
MIN_ORPHAN_AGE_MS = 3600 * 1000


class SpecError(PaimonJobError):
    """A spec or result that does not have exactly the keys of its type."""

    retryable: bool = False  # the retry sends the same spec (another version of the operator wrote it)


class Wire:
    """JSON on the wire: a flat dict of the dataclass's fields."""

    what: ClassVar[str] = "job spec or result"  # named in errors
    __dataclass_fields__: ClassVar[dict[str, Any]]  # every subclass is a dataclass

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        if not isinstance(data, dict):
            raise SpecError(f"{cls.what}: expected a JSON object, got {type(data).__name__}")
        fields = dataclasses.fields(cls)
        required = {f.name for f in fields
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        unknown = sorted(set(data) - {f.name for f in fields})
        missing = sorted(required - set(data))
        if unknown or missing:
            table = data.get("table", "?")
            problems = (([f"unknown keys {unknown}"] if unknown else [])
                        + ([f"missing keys {missing}"] if missing else []))
            raise SpecError(f"{cls.what} for table {table}: {'; '.join(problems)}")
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class JobSpec(Wire):
    """What every job gets: the catalog (its options hold the storage credentials) and the table."""

    catalog_options: dict[str, Any]
    table: str
    shuffle_partitions: int | None = None  # Spark's spark.sql.shuffle.partitions (None: the jobs' default)


# --- bootstrap-index -------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class BootstrapSpec(JobSpec):
    what: ClassVar[str] = "bootstrap-index spec"
    shards: int
    index_root: str
    table_spec: dict[str, Any] | None = None  # creates the table when absent (engine/table/table.py TableSpec)
    schema_evolution: str = "none"  # one of SCHEMA_EVOLUTIONS: how an existing table may grow to table_spec


@dataclass(frozen=True, kw_only=True)
class BootstrapResult(Wire):
    what: ClassVar[str] = "bootstrap-index result"
    table: str
    shards: int
    base_snapshot_id: int | None
    index_uri: str | None  # None: the table needs no global index (not cross-partition)
    keys: int
    reused: bool
    index_decision: str  # reused | caught_up | rebuilt | not_needed (engine/index/bootstrap.py)
    reason: str
    data_files_read: int
    decided_by: str = "spark"  # "metadata": decided in the task from table metadata, no Spark job submitted
    # what tells the base snapshot from a later one reusing its id after a rollback (engine/snapshot/history.py)
    base_snapshot_fingerprint: str | None = None


# --- assign-and-write ------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class AssignWriteSpec(JobSpec):
    what: ClassVar[str] = "assign-and-write spec"
    source: dict[str, Any]  # {"path", "format"?, "options"?} | {"query"} | {"table"} (spark/source.py)
    base_snapshot_id: int | None
    index_uri: str | None
    shards: int
    staging_root: str
    dag_id: str
    run_id: str
    row_kind_column: str | None = None
    write_mode: str = "upsert"  # or "overwrite": dynamic partition overwrite (engine/commit/overwrite.py)
    schema_evolution: str = "none"  # one of SCHEMA_EVOLUTIONS: how the table may grow to the source's columns
    base_snapshot_fingerprint: str | None = None  # engine/snapshot/history.py
    generation: int = 0  # the DAG run's clear_number: part of the commit identity (engine/commit/identity.py)
    reprocess_on_clear: str = "upsert"  # one of REPROCESS_ON_CLEAR
    # the DAG run's clock (engine/commit/properties.py RunClock.to_dict: the instant its data is as of, the write
    # order, whose run): the order of runs' rows in a deduplicate table, whatever order they commit in
    # (engine/commit/ordering.py); None: commit order
    clock: dict | None = None

    @classmethod
    def after(cls, boot: BootstrapResult, **fields) -> "AssignWriteSpec":
        """The write against what bootstrap-index decided: its snapshot, index and shards."""
        return cls(**fields, base_snapshot_id=boot.base_snapshot_id, index_uri=boot.index_uri, shards=boot.shards,
                   base_snapshot_fingerprint=boot.base_snapshot_fingerprint)


def source_spec(source: str | dict, source_format: str | None = None, source_options: dict | None = None) -> dict:
    """The operator's ``source`` (a path, or ``{"query"}`` / ``{"table"}``) as the spec's source dict."""
    spec = dict(source) if isinstance(source, dict) else {"path": source}
    if source_format:
        spec["format"] = source_format
    if source_options:
        spec["options"] = source_options
    return spec


# what an assign-and-write counts (AssignWriteResult's fields), reported again by a commit that wrote it anew
ASSIGN_WRITE_COUNTERS = ("rows_in", "rows_written", "deletes", "files", "moved_keys", "new_keys", "superseded_keys",
                         "superseded_keys_by_others")


@dataclass(frozen=True, kw_only=True)
class AssignWriteResult(Wire):
    what: ClassVar[str] = "assign-and-write result"
    table: str
    base_snapshot_id: int | None
    commit_user: str
    commit_identifier: int
    staging_uri: str
    rows_in: int
    rows_written: int
    deletes: int
    moved_keys: int
    new_keys: int | None = None  # keys the global index did not know (None: the table has no global index)
    files: int
    already_committed: bool
    base_snapshot_fingerprint: str | None = None  # engine/snapshot/history.py
    generation: int = 0  # the DAG run's clear_number this write ran as
    # a cleared run's write: the snapshot an earlier generation of the run committed (None: not a reprocess)
    reprocessed_snapshot_id: int | None = None
    # keys this run left out because runs as of a later instant wrote them or overwrote their partition
    # (engine/commit/ordering.py): runs of its own DAG and run type; other DAGs' runs or other run types'; and
    # per snapshot yielded to, {snapshot_id, dag_id, run_id, run_type, as_of_ms, keys}
    superseded_keys: int = 0
    superseded_keys_by_others: int = 0
    superseded_by: list[dict] = field(default_factory=list)


# --- commit ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class CommitSpec(JobSpec):
    what: ClassVar[str] = "commit spec"
    staging_uri: str
    commit_user: str
    commit_identifier: int
    base_snapshot_id: int | None
    staging_root: str | None = None  # when given, staging_uri must be <staging_root>/<table>/<commit_user>
    staging_retention_seconds: float = STAGING_RETENTION_SECONDS
    result_uri: str | None = None  # this job's result file: older ones of the DAG are dropped next to it
    base_snapshot_fingerprint: str | None = None  # engine/snapshot/history.py
    rewrites: int = 0  # times the commit task wrote the run's batch again before this commit (a snapshot property)

    @classmethod
    def after(cls, written: AssignWriteResult, **common) -> "CommitSpec":
        """The commit of what assign-and-write staged."""
        return cls(**common, staging_uri=written.staging_uri, commit_user=written.commit_user,
                   commit_identifier=written.commit_identifier, base_snapshot_id=written.base_snapshot_id,
                   base_snapshot_fingerprint=written.base_snapshot_fingerprint)


@dataclass(frozen=True, kw_only=True)
class CommitResult(Wire):
    what: ClassVar[str] = "commit result"
    table: str
    snapshot_id: int | None
    base_snapshot_id: int | None
    already_committed: bool
    # of the run's snapshot (None: nothing to commit): Paimon's commit kind and record count, the data files added
    commit_kind: str | None = None
    delta_record_count: int | None = None
    files: int | None = None
    snapshot_fingerprint: str | None = None  # which snapshot snapshot_id is (engine/snapshot/history.py)
    # snapshots of other writers that landed after the base and the commit went on top of (engine/commit/rebase.py)
    rebased_over: list[int] = field(default_factory=list)
    # times the commit task re-ran this run's bootstrap-index and assign-and-write after other writers' commits
    # conflicted with its staged write (operators/write.py PaimonCommitOperator)
    rewrites: int = 0
    # after a rewrite: the counters of the assign-and-write that landed (rows_in, rows_written, deletes, files,
    # superseded keys), which the assign-and-write task's own XCom, of its refused write, does not show
    written: dict | None = None


# --- compact ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class CompactSpec(JobSpec):
    what: ClassVar[str] = "compact spec"
    dag_id: str
    run_id: str
    snapshot_id: int | None  # the commit's snapshot: the input of this compaction
    generation: int = 0  # the DAG run's clear_number: part of the compaction's commit identity
    full: bool = False
    scope: str = "snapshot"  # one of SCOPES
    partition_filter: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class CompactResult(Wire):
    what: ClassVar[str] = "compact result"
    table: str
    snapshot_id: int | None  # the COMPACT snapshot, or the input snapshot when nothing was due
    compacted_buckets: int
    files_before: int
    files_after: int
    already_committed: bool
    base_snapshot_id: int | None = None  # the input snapshot (the commit's, or the latest when standalone)
    decided_by: str = "spark"  # "metadata": nothing due (or done before), decided in the task, no Spark job


# --- maintenance -----------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ExpireSpec(JobSpec):
    what: ClassVar[str] = "expire-snapshots spec"
    options: dict[str, Any] = field(default_factory=dict)  # snapshot.* options overriding the table's
    dry_run: bool = False


@dataclass(frozen=True, kw_only=True)
class ExpireResult(Wire):
    what: ClassVar[str] = "expire-snapshots result"
    table: str
    expired_snapshots: int
    deleted_data_files: int
    deleted_metadata_files: int
    earliest_snapshot_id: int | None
    dry_run: bool


@dataclass(frozen=True, kw_only=True)
class OrphansSpec(JobSpec):
    what: ClassVar[str] = "remove-orphan-files spec"
    older_than_ms: int | None = None  # None: the default margin (engine/maintenance/orphans.py); at least 1 h
    staging_root: str | None = None
    dry_run: bool = False


@dataclass(frozen=True, kw_only=True)
class OrphansResult(Wire):
    what: ClassVar[str] = "remove-orphan-files result"
    table: str
    orphan_files: int
    orphan_bytes: int
    stale_staging_dirs: int
    dry_run: bool
    sample: list[str]


# --- incremental-read ------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class IncrementalReadSpec(JobSpec):
    what: ClassVar[str] = "incremental-read spec"
    start_snapshot_id: int  # exclusive; 0 reads the whole table at end_snapshot_id
    target: str  # a directory: part-NNNNN.parquet, one per changed partition
    end_snapshot_id: int | None = None  # inclusive; None: the latest snapshot
    row_kind_column: str = "row_kind"
    scan_mode: str = "auto"  # "diff", "changelog", or "auto": changelog where the table has a changelog producer
    # the start's identity (engine/snapshot/snapshots.py cursor): a rollback below it moves the start down to the
    # snapshot rolled back to; None (a bare id): not detected
    start_snapshot: dict | None = None


@dataclass(frozen=True, kw_only=True)
class IncrementalReadResult(Wire):
    what: ClassVar[str] = "incremental-read result"
    table: str
    start_snapshot_id: int
    end_snapshot_id: int
    target: str
    row_kind_column: str
    changed_partitions: int
    files: int
    rows: int
    inserts: int
    updates: int
    deletes: int
    update_befores: int = 0  # -U rows (changelog mode only)
    scan_mode: str = "diff"  # what was read: "diff" or "changelog"
    rolled_back_from: int | None = None  # the start asked for, when the table was rolled back below it
