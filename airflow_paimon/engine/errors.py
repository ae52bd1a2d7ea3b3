"""Errors the engine raises on purpose; each names the table and, where there is one, the column and value."""


SHOWN_CHARS = 200  # longest column name or value an error echoes (a CSV header line, a long string)


def shown(value) -> str:
    """``repr(value)``, cut to SHOWN_CHARS characters."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"... ({len(text)} chars)"


def is_retryable(error: BaseException) -> bool:
    """Whether a retry of the task can help: the ``retryable`` its class declares (every error class of this
    provider does, where it is defined); True for any other error: a foreign one (an OSError, pyarrow's or
    pypaimon's ValueError or RuntimeError, a crash) is not known to be permanent. The provider's own raises are
    all typed (tests/unit/project/test_typed_errors.py), so an untyped error is never one of its refusals."""
    flag = getattr(type(error), "retryable", True)
    return flag if isinstance(flag, bool) else True


def heals_by_rewrite(error: BaseException) -> bool:
    """Whether writing the DAG run's batch again from its bootstrap-index gets past the error (``rewrite_heals``
    its class declares): the table moved under the staged write (another writer's conflicting commit, a rollback,
    a schema change, a removed file); the commit task does that itself (operators/write.py)."""
    return getattr(type(error), "rewrite_heals", False) is True


class PaimonJobError(Exception):
    """A write cannot go on; nothing has been staged or committed."""

    # raised as such mostly for a condition of the moment (the schema changed under the job); a subclass says
    # False where a retry meets the same refusal
    retryable: bool = True


class ValidationError(PaimonJobError):
    """The input, the declared schema or a table option does not fit the table (or this provider)."""

    retryable: bool = False  # the same input meets the same table: only a change of input or table helps
    table: str | None  # None in a StepValidationError (job_env/step.py): its message names the table

    def __init__(self, table: str, message: str, column: str | None = None, value=None, option: str | None = None):
        self.table, self.column, self.value, self.option = table, column, value, option
        where = f"table {table}"
        if column is not None:
            where += f", column {shown(column)}"
        if option is not None:
            where += f", option {shown(option)}"
        if value is not None or column is not None or option is not None:
            where += f", value {shown(value)}"
        super().__init__(f"{where}: {message}")


class StaleIndexError(PaimonJobError):
    """The table moved after the index was bootstrapped, so the staged assignment may be wrong."""

    # retrying this task alone meets the same moved table: the run is cleared from its bootstrap-index task
    retryable: bool = False
    rewrite_heals: bool = True  # bootstrap-index and assign-and-write again, against the table as it is now


class IndexGoneError(StaleIndexError):
    """The index the run's bootstrap-index returned is not published any more (cleaned up as an old index after
    newer ones, or lost): assign-and-write bootstraps again at the latest snapshot and writes against that
    (engine/runs/assign_and_write.py); raised out of it only where that cannot run (an executor without index tasks,
    or the new index cleaned up too before its write began)."""

    retryable: bool = True  # a retry of assign-and-write bootstraps again, at the table as it is then
    # the retry heals it; a rewrite flag would fail the assign-and-write task at once (operators/spark_job.py)
    rewrite_heals: bool = False


class RolledBackError(StaleIndexError):
    """The snapshot a run started from is no longer in the table's history (rolled back, or expired): what the
    run planned on it may resurrect or duplicate rows."""

    retryable: bool = False  # the run's base stays gone: the run is cleared from its bootstrap-index task


class TableChangedError(StaleIndexError):
    """The table's options or schema changed (by another engine) between the write and its commit, so the
    staged files were written for another table."""

    retryable: bool = False  # the staged files stay written for the old table: the run is cleared from bootstrap


class MissingFileError(PaimonJobError):
    """A file a commit would add is gone (orphan removal with too short an ``older_than``): nothing committed."""

    retryable: bool = False  # the file stays gone: the files are written again by a re-run from bootstrap
    rewrite_heals: bool = True


class HalfCommittedError(PaimonJobError):
    """A deletion-vector or ``changelog-producer=lookup`` write landed its APPEND snapshot, and its COMPACT snapshot
    can no longer land after it: another commit changed the write's buckets in between. The write is in the table
    (its level-0 files); a full compaction completes it."""

    retryable: bool = False  # the buckets stay changed: a retry meets the same refusal
    rewrite_heals: bool = False  # writing the batch again would apply it twice, on top of its APPEND


class UnknownCommitError(PaimonJobError):
    """A DAG run's commit was about to land when its commit task died, and every snapshot it could have made since
    has expired: whether it landed cannot be told, so it is not written again (that could count it twice)."""

    retryable: bool = False  # the snapshots stay expired: a retry cannot tell either
    rewrite_heals: bool = False  # writing the batch again is the double count this refuses


class TransientError(PaimonJobError):
    """A condition of the moment: the table changed under the job (its schema, a racing writer), a commit's
    snapshot not seen yet, a local warehouse not created yet."""

    retryable: bool = True  # the retry meets the table as it is then


class CorruptTableError(PaimonJobError):
    """The table's own files contradict each other (a corrupt or doubled index file, a schema file gone, a path
    listed under another name): nothing was staged, committed or deleted."""

    retryable: bool = False  # the retry reads the same files: the table needs repair first


class InternalError(PaimonJobError):
    """A caller inside this provider broke a contract of the code it called: a bug, named by the message."""

    retryable: bool = False  # the retry runs the same code on the same input


class ConfigError(ValueError):
    """An operator argument, a connection's field or an Airflow setting is wrong; a ValueError, as Airflow
    expects of a bad argument when it parses a DAG."""

    retryable: bool = False  # the retry reads the same argument, connection and setting
