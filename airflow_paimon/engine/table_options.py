"""A table's options, checked in one place before anything is created, staged or committed.

Two kinds of check, both failing with a ValidationError naming the table, the option and its value:

- Every option this provider acts on is parsed as Paimon parses it (integers with their range, durations such
  as ``1 h`` / ``30 min`` / ``7 d``, memory sizes such as ``64 mb``, booleans, enums), so a bad value fails up
  front rather than inside a Spark task.
- Paimon options that change how a writer must write, which this provider's writer or compaction does not
  implement, are refused: a table written without them would be wrong (e.g. level-0 files are invisible to
  readers in deletion-vector mode; a changelog producer's files must be written by whoever knows the change).

Declared options are checked before ``create_table`` (engine/table.py); an existing table's own options (another
engine may have set them) on every bootstrap, write and compaction, before anything is staged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from pypaimon.common.memory_size import MemorySize
from pypaimon.common.time_utils import parse_duration

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.merge.merge_engine import IGNORE_DELETE_KEYS, MergeEngine

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

JAVA_INT_MAX = 2**31 - 1
MAX_DYNAMIC_BUCKETS = 32767 + 1  # bucket ids are Java shorts
MERGE_ENGINES = tuple(m.value for m in MergeEngine)  # every merge engine Paimon has
FILE_FORMATS = ("parquet", "orc")  # what engine/data_files.py reads back (index bootstrap, compaction)
# Paimon's changelog producers, all written here: 'input' by the writer (engine/write/bucket_writer.py), 'lookup' by
# a write's compaction of level 0 (engine/write/lookup_compact.py, engine/write/force_up_level_0.py),
# 'full-compaction' by every compaction into the max level (engine/compact/rewrite.py)
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
# merge engines whose deletion-vector writes need no old values (engine/write/lookup_compact.py)
# what engine/data_files.py reads back (index bootstrap, compaction)
DELETION_VECTOR_ENGINES = ("deduplicate", "first-row")

# Integer options this provider reads: (smallest, largest, other accepted values) as Paimon accepts them.
INT_OPTIONS = {
    "bucket": (1, JAVA_INT_MAX, (-1,)),  # -1 dynamic; 0 and -2 (postpone) are not written here
    "dynamic-bucket.target-row-num": (1, None, ()),
    "dynamic-bucket.initial-buckets": (1, None, ()),
    "dynamic-bucket.max-buckets": (1, MAX_DYNAMIC_BUCKETS, (-1,)),
    "num-sorted-run.compaction-trigger": (1, None, ()),
    "num-sorted-run.stop-trigger": (1, None, ()),
    "compaction.max-size-amplification-percent": (0, None, ()),
    "compaction.size-ratio": (0, None, ()),
    "num-levels": (2, None, ()),
    "snapshot.num-retained.min": (1, None, ()),
    "snapshot.num-retained.max": (1, None, ()),
    "snapshot.expire.limit": (1, None, ()),
    "full-compaction.delta-commits": (1, None, ()),
}
MEMORY_OPTIONS = ("target-file-size", "write-buffer-size", "rocksdb.block.cache-size", "rocksdb.writebuffer.size")
DURATION_OPTIONS = ("cross-partition-upsert.index-ttl", "snapshot.time-retained")
BOOLEAN_OPTIONS = ("deletion-vectors.enabled", *IGNORE_DELETE_KEYS, "ignore-update-before",
                   "changelog-producer.row-deduplicate",
                   "partial-update.remove-record-on-delete", "aggregation.remove-record-on-delete")


# --- parsing, as Paimon's ConfigOptions parse ------------------------------------------------------------

def _given(options: dict, key: str):
    value = options.get(key)
    return None if value is None or str(value).strip() == "" else str(value)


def _refuse(identifier: str, key: str, value, problem: str):
    return ValidationError(identifier, problem, option=key, value=value)


@overload
def integer(identifier: str, options: dict, key: str, default: int) -> int: ...
@overload
def integer(identifier: str, options: dict, key: str, default: None) -> int | None: ...
def integer(identifier: str, options: dict, key: str, default: int | None) -> int | None:
    """An integer option within its range (INT_OPTIONS), or ``default`` when unset."""
    raw = _given(options, key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise _refuse(identifier, key, raw, "must be an integer") from None
    smallest, largest, others = INT_OPTIONS.get(key, (None, None, ()))
    if value in others:
        return value
    if (smallest is not None and value < smallest) or (largest is not None and value > largest):
        allowed = " or ".join([*(str(o) for o in others),
                               f"{smallest}..{largest}" if largest is not None else f"at least {smallest}"])
        if key == "bucket":
            allowed = "-1 (dynamic) or at least 1 (fixed); postpone bucket (-2) is not written here"
        raise _refuse(identifier, key, raw, f"must be {allowed}")
    return value


@overload
def duration_ms(identifier: str, options: dict, key: str, default: int) -> int: ...
@overload
def duration_ms(identifier: str, options: dict, key: str, default: None) -> int | None: ...
def duration_ms(identifier: str, options: dict, key: str, default: int | None) -> int | None:
    """A Paimon duration (``500 ms``, ``30 s``, ``15 min``, ``1 h``, ``7 d``; a bare number is milliseconds)."""
    raw = _given(options, key)
    if raw is None:
        return default
    try:
        return parse_duration(raw)
    except ValueError as e:
        raise _refuse(identifier, key, raw, f"is not a duration such as '30 min', '1 h' or '7 d' ({e})") from None


@overload
def memory_bytes(identifier: str, options: dict, key: str, default: int) -> int: ...
@overload
def memory_bytes(identifier: str, options: dict, key: str, default: None) -> int | None: ...
def memory_bytes(identifier: str, options: dict, key: str, default: int | None) -> int | None:
    """A Paimon memory size (``64 mb``, ``1 gb``, ``512 kb``; a bare number is bytes), at least one byte."""
    raw = _given(options, key)
    if raw is None:
        return default
    try:
        value = MemorySize.parse_bytes(raw)
    except ValueError as e:
        raise _refuse(identifier, key, raw, f"is not a memory size such as '64 mb' ({e})") from None
    if value < 1:
        raise _refuse(identifier, key, raw, "must be at least 1 byte")
    return value


def boolean(identifier: str, options: dict, key: str, default: bool = False) -> bool:
    raw = _given(options, key)
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise _refuse(identifier, key, raw, "must be true or false")
    return raw.strip().lower() == "true"


def choice(identifier: str, options: dict, key: str, allowed: tuple[str, ...], default: str) -> str:
    raw = _given(options, key)
    if raw is None:
        return default
    if raw.strip().lower() not in allowed:
        raise _refuse(identifier, key, raw, f"is not supported (supported: {', '.join(allowed)})")
    return raw.strip().lower()


# --- the table the options belong to -------------------------------------------------------------------

@dataclass(frozen=True)
class TableColumns:
    """What the option rules need to know of a table: its columns (name -> Paimon type) and keys."""
    columns: dict[str, str]
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]

    @classmethod
    def of_table(cls, table: FileStoreTable) -> "TableColumns":
        return cls({f.name: str(f.type) for f in table.table_schema.fields}, tuple(table.primary_keys),
                   tuple(table.partition_keys))

    @property
    def cross_partition(self) -> bool:
        """Paimon's crossPartitionUpdate: the primary key lacks a partition field."""
        return bool(self.primary_keys) and not set(self.partition_keys) <= set(self.primary_keys)


def changelog_producer(options: dict) -> str:
    """The table's ``changelog-producer`` (``none`` when unset), as the writers and readers act on it; its value
    was checked with the table's other options (check_options)."""
    return str(options.get("changelog-producer") or "none").strip().lower()


def full_compaction_delta_commits(identifier: str, options: dict) -> int | None:
    """Every how many write commits a compaction is full (Paimon's ``full-compaction.delta-commits``; 1 with
    ``changelog-producer=full-compaction``, Paimon's default there); None: only when asked for."""
    default = 1 if changelog_producer(options) == "full-compaction" else None
    return integer(identifier, options, "full-compaction.delta-commits", default)


def check_table(table: FileStoreTable, *, compaction: bool = False) -> None:
    """Check an existing table's own options (``compaction``: also what only compaction needs)."""
    identifier = table.identifier.get_full_name()
    options = dict(table.table_schema.options)
    check_options(identifier, options, TableColumns.of_table(table))
    if compaction:
        check_compaction_options(identifier, options)


def check_options(identifier: str, options: dict, shape: TableColumns) -> None:
    """Refuse an unparsable, out-of-range or unsupported table option before anything is created or written."""
    options = {str(k): str(v) for k, v in dict(options or {}).items() if v is not None}
    for key in INT_OPTIONS:
        integer(identifier, options, key, None)
    for key in MEMORY_OPTIONS:
        memory_bytes(identifier, options, key, None)
    for key in DURATION_OPTIONS:
        duration_ms(identifier, options, key, None)
    for key in BOOLEAN_OPTIONS:
        boolean(identifier, options, key)
    for key in sorted(k for k in options if k.startswith("fields.") and k.endswith(".ignore-retract")):
        boolean(identifier, options, key)
    _check_retention(identifier, options)
    _check_file_format(identifier, options)
    _check_bucket(identifier, options, shape)
    if shape.primary_keys:
        _check_merge(identifier, options, shape)
    elif _given(options, "changelog-producer") not in (None, "none"):
        raise _refuse(identifier, "changelog-producer", options["changelog-producer"],
                      "needs a primary key (Paimon refuses it on a table without one)")
    from airflow_paimon.engine.commit.manifest_merge import ManifestMergeOptions

    ManifestMergeOptions.from_dict(identifier, options)


def _check_retention(identifier: str, options: dict) -> None:
    retain_min = integer(identifier, options, "snapshot.num-retained.min", 10)
    retain_max = integer(identifier, options, "snapshot.num-retained.max", JAVA_INT_MAX)
    if retain_max < retain_min:
        raise _refuse(identifier, "snapshot.num-retained.max", options.get("snapshot.num-retained.max"),
                      f"must not be below snapshot.num-retained.min ({retain_min})")


def _check_file_format(identifier: str, options: dict) -> None:
    choice(identifier, options, "file.format", FILE_FORMATS, "parquet")
    per_level = _given(options, "file.format.per.level")
    for item in (per_level or "").split(","):
        level_format = item.split(":", 1)[-1].strip().lower()
        if item.strip() and level_format not in FILE_FORMATS:
            raise _refuse(identifier, "file.format.per.level", per_level,
                          f"is not supported (supported formats: {', '.join(FILE_FORMATS)})")


def _check_bucket(identifier: str, options: dict, shape: TableColumns) -> None:
    """Paimon's bucket rules, and those of the fixed-bucket writer (engine/assign/fixed.py)."""
    bucket = integer(identifier, options, "bucket", -1)
    bucket_key = _given(options, "bucket-key")
    if bucket == -1 and bucket_key is not None:
        raise _refuse(identifier, "bucket-key", bucket_key, "cannot be set with bucket -1 (dynamic or unaware "
                                                            "bucket mode), as in Paimon")
    if shape.cross_partition and bucket != -1:
        raise _refuse(identifier, "bucket", options.get("bucket"),
                      f"must be -1 for a cross-partition table (primary key {list(shape.primary_keys)} does not "
                      f"include all partition fields {list(shape.partition_keys)}), as in Paimon")
    if not shape.primary_keys or bucket < 1:
        return
    keys = ([k.strip() for k in bucket_key.split(",")] if bucket_key is not None
            else [k for k in shape.primary_keys if k not in shape.partition_keys])
    if bucket_key is not None:
        problem = next((f"names {k!r}, which is not a column" for k in keys if k not in shape.columns), None)
        problem = problem or next((f"must not contain the partition field {k!r}" for k in keys
                                   if k in shape.partition_keys), None)
        problem = problem or next((f"must be a subset of the primary key {list(shape.primary_keys)}" for k in keys
                                   if k not in shape.primary_keys), None)
        if problem:
            raise _refuse(identifier, "bucket-key", bucket_key, problem)
    if not keys:
        raise _refuse(identifier, "bucket", options.get("bucket"), "a fixed bucket needs a bucket key: set "
                                                                  "'bucket-key' or a primary key beyond the partition")
    function = choice(identifier, options, "bucket-function.type", ("default", "mod"), "default")
    if function == "mod":
        types = [shape.columns.get(k, "").split()[0].split("(")[0].upper() for k in keys]
        if len(keys) != 1 or types[0] not in ("INT", "INTEGER", "BIGINT"):
            raise _refuse(identifier, "bucket-function.type", options["bucket-function.type"],
                          f"needs exactly one INT or BIGINT bucket key, got {keys}")


def _check_merge(identifier: str, options: dict, shape: TableColumns) -> None:
    """What a primary-key table's writer must do that this provider's writer does not, refused."""
    producer = choice(identifier, options, "changelog-producer", CHANGELOG_PRODUCERS, "none")
    engine = choice(identifier, options, "merge-engine", MERGE_ENGINES, "deduplicate")
    if producer == "full-compaction" and boolean(identifier, options, "deletion-vectors.enabled"):
        raise _refuse(identifier, "changelog-producer", options["changelog-producer"],
                      "cannot be used with deletion vectors: Paimon takes 'none', 'input' or 'lookup' there (Java "
                      "Paimon refuses to open such a table)")
    if producer == "full-compaction" and engine == "first-row":
        raise _refuse(identifier, "changelog-producer", options["changelog-producer"],
                      "merge-engine first-row takes only 'none' or 'lookup', as in Paimon")
    ignored = _given(options, "changelog-producer.row-deduplicate-ignore-fields")
    if ignored is not None:
        raise _refuse(identifier, "changelog-producer.row-deduplicate-ignore-fields", ignored,
                      "is not implemented (changelog-producer.row-deduplicate compares every field)")
    if boolean(identifier, options, "ignore-update-before"):
        raise _refuse(identifier, "ignore-update-before", options["ignore-update-before"],
                      "dropping -U records is not implemented (use 'ignore-delete' to drop -U and -D)")
    choice(identifier, options, "sequence.field.sort-order", ("ascending", "descending"), "ascending")
    _check_sequence_field(identifier, options, shape, engine)
    if engine == "partial-update":
        for key in sorted(options):  # the in-batch merge and compaction merge without groups or functions
            grouped = key.startswith("fields.") and key.endswith((".sequence-group", ".aggregate-function"))
            if grouped or key == "fields.default-aggregate-function" or (
                    key == "partial-update.remove-record-on-sequence-group" and _given(options, key)):
                raise _refuse(identifier, key, options[key], "merge-engine partial-update with sequence groups or "
                                                             "aggregate functions is not implemented")


def _check_sequence_field(identifier: str, options: dict, shape: TableColumns, engine: str) -> None:
    raw = _given(options, "sequence.field")
    if raw is None:
        return
    fields = [f.strip() for f in raw.split(",") if f.strip()]
    problem = next((f"names {f!r}, which is not a column" for f in fields if f not in shape.columns), None)
    problem = problem or next((f"names {f!r} twice" for f in fields if fields.count(f) > 1), None)
    problem = problem or next((f"names {f!r}, which has an aggregate function" for f in fields
                               if _given(options, f"fields.{f}.aggregate-function")), None)
    if engine == "first-row":
        problem = problem or "cannot be used with merge-engine first-row, as in Paimon"
    if shape.cross_partition:
        problem = problem or (f"cannot be used on a cross-partition table (primary key {list(shape.primary_keys)} "
                              f"does not include all partition fields {list(shape.partition_keys)}), as in Paimon")
    if problem:
        raise _refuse(identifier, "sequence.field", raw, problem)


def check_compaction_options(identifier: str, options: dict) -> None:
    """What only compaction needs beyond check_options: the aggregation options it merges with."""
    from airflow_paimon.engine.merge.aggregate import check_function

    options = {str(k): str(v) for k, v in dict(options or {}).items() if v is not None}
    if _given(options, "record-level.expire-time"):
        raise _refuse(identifier, "record-level.expire-time", options["record-level.expire-time"],
                      "compaction here does not expire records")
    if choice(identifier, options, "merge-engine", MERGE_ENGINES, "deduplicate") != "aggregation":
        return
    if boolean(identifier, options, "aggregation.remove-record-on-delete"):
        raise _refuse(identifier, "aggregation.remove-record-on-delete", options["aggregation.remove-record-on-delete"],
                      "compaction of merge-engine aggregation does not implement it")
    for key, value in sorted(options.items()):
        if key.startswith("fields.") and key.endswith(".sequence-group"):
            raise _refuse(identifier, key, value, "compaction of merge-engine aggregation with sequence groups is "
                                                  "not implemented")
        if key == "fields.default-aggregate-function" or (key.startswith("fields.")
                                                         and key.endswith(".aggregate-function")):
            check_function(identifier, key, value)


@dataclass(frozen=True)
class CompactOptions:
    """The table options that steer compaction, with Paimon's defaults."""

    num_sorted_run_compaction_trigger: int = 5
    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    num_levels: int | None = None  # Paimon: trigger + 1 when unset

    @classmethod
    def of(cls, options: dict) -> "CompactOptions":
        def get(key, default):
            value = options.get(key)
            return default if value is None or str(value) == "" else int(value)
        return cls(get("num-sorted-run.compaction-trigger", 5),
                   get("compaction.max-size-amplification-percent", 200),
                   get("compaction.size-ratio", 1),
                   get("num-levels", None))

    @property
    def levels(self) -> int:
        return self.num_levels if self.num_levels is not None else self.num_sorted_run_compaction_trigger + 1
