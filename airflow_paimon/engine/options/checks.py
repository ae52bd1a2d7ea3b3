"""The rules of a table's options: checked in one place before anything is created, staged or committed.

Two kinds of check, both failing with a ValidationError naming the table, the option and its value:

- Every option this provider acts on is parsed as Paimon parses it (integers with their range, durations such
  as ``1 h`` / ``30 min`` / ``7 d``, memory sizes such as ``64 mb``, booleans, enums), so a bad value fails up
  front rather than inside a Spark task: declared in declared.py, parsed by ``TableOptions``
  (table_options.py), the rules between options and the table's columns here.
- Paimon options that change how a writer must write, which this provider's writer or compaction does not
  implement, are refused: a table written without them would be wrong (e.g. level-0 files are invisible to
  readers in deletion-vector mode; a changelog producer's files must be written by whoever knows the change).

Declared options are checked before ``create_table`` (engine/table/table.py); an existing table's own options (another
engine may have set them) on every bootstrap, write and compaction, before anything is staged.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options.declared import (AGGREGATE_ALIASES, FILE_FORMATS, IMPLEMENTED_AGGREGATES,
                                                    NOT_IMPLEMENTED_AGGREGATES)
from airflow_paimon.engine.options.table_options import TableOptions

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

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


def check_table(table: FileStoreTable, *, compaction: bool = False) -> None:
    """Check an existing table's own options (``compaction``: also what only compaction needs)."""
    options = TableOptions.of(table)
    check_parsed(options, TableColumns.of_table(table))
    if compaction:
        check_compaction_options(options)


def check_options(identifier: str, options: dict, shape: TableColumns) -> None:
    """Refuse an unparsable, out-of-range or unsupported table option before anything is created or written."""
    check_parsed(TableOptions.parse(identifier, options), shape)


def check_parsed(options: TableOptions, shape: TableColumns) -> None:
    options.check()
    _check_file_format(options)
    _check_bucket(options, shape)
    if shape.primary_keys:
        _check_merge(options, shape)
    elif options.given("changelog-producer") not in (None, "none"):
        raise options.refuse("changelog-producer", "needs a primary key (Paimon refuses it on a table without one)")


def _check_file_format(options: TableOptions) -> None:
    per_level = options.given("file.format.per.level")
    for item in (per_level or "").split(","):
        level_format = item.split(":", 1)[-1].strip().lower()
        if item.strip() and level_format not in FILE_FORMATS:
            raise options.refuse("file.format.per.level",
                                 f"is not supported (supported formats: {', '.join(FILE_FORMATS)})")


def _check_bucket(options: TableOptions, shape: TableColumns) -> None:
    """Paimon's bucket rules, and those of the fixed-bucket writer (engine/assign/fixed.py)."""
    bucket = options.get("bucket")
    bucket_key = options.given("bucket-key")
    if bucket == -1 and bucket_key is not None:
        raise options.refuse("bucket-key", "cannot be set with bucket -1 (dynamic or unaware bucket mode), as in "
                                           "Paimon")
    if shape.cross_partition and bucket != -1:
        raise options.refuse("bucket", f"must be -1 for a cross-partition table (primary key "
                                       f"{list(shape.primary_keys)} does not include all partition fields "
                                       f"{list(shape.partition_keys)}), as in Paimon")
    if not shape.primary_keys or bucket < 1:
        return
    declared = options.buckets.bucket_key
    keys = list(declared) if declared is not None else [k for k in shape.primary_keys if k not in shape.partition_keys]
    if declared is not None:
        problem = next((f"names {k!r}, which is not a column" for k in keys if k not in shape.columns), None)
        problem = problem or next((f"must not contain the partition field {k!r}" for k in keys
                                   if k in shape.partition_keys), None)
        problem = problem or next((f"must be a subset of the primary key {list(shape.primary_keys)}" for k in keys
                                   if k not in shape.primary_keys), None)
        if problem:
            raise options.refuse("bucket-key", problem)
    if not keys:
        raise options.refuse("bucket", "a fixed bucket needs a bucket key: set 'bucket-key' or a primary key beyond "
                                       "the partition")
    if options.get("bucket-function.type") == "mod":
        types = [shape.columns.get(k, "").split()[0].split("(")[0].upper() for k in keys]
        if len(keys) != 1 or types[0] not in ("INT", "INTEGER", "BIGINT"):
            raise options.refuse("bucket-function.type", f"needs exactly one INT or BIGINT bucket key, got {keys}")


def _check_merge(options: TableOptions, shape: TableColumns) -> None:
    """What a primary-key table's writer must do that this provider's writer does not, refused."""
    producer, engine = options.changelog_producer, options.get("merge-engine")
    # in the order of Paimon's SchemaValidation, so that a table breaking two rules gets Paimon's reason
    if producer not in ("none", "lookup") and engine == "first-row":
        raise options.refuse("changelog-producer", "merge-engine first-row takes only 'none' or 'lookup', as in "
                                                   "Paimon")
    if producer == "full-compaction" and options.deletion_vectors:
        raise options.refuse("changelog-producer", "cannot be used with deletion vectors: Paimon takes 'none', "
                                                   "'input' or 'lookup' there (Java Paimon refuses to open such a "
                                                   "table)")
    if engine == "first-row" and options.deletion_vectors:
        raise options.refuse("deletion-vectors.enabled", "cannot be used with merge-engine first-row, as in Paimon "
                                                         "(first-row deletes no old rows: there is nothing to mark)")
    if options.given("changelog-producer.row-deduplicate-ignore-fields") is not None:
        raise options.refuse("changelog-producer.row-deduplicate-ignore-fields",
                             "is not implemented (changelog-producer.row-deduplicate compares every field)")
    if options.get("ignore-update-before"):
        raise options.refuse("ignore-update-before", "dropping -U records is not implemented (use 'ignore-delete' "
                                                     "to drop -U and -D)")
    options.get("sequence.field.sort-order")
    _check_sequence_field(options, shape, engine)
    if engine == "partial-update":
        for key in sorted(options.raw):  # the in-batch merge and compaction merge without groups or functions
            grouped = key.startswith("fields.") and key.endswith((".sequence-group", ".aggregate-function"))
            if grouped or key == "fields.default-aggregate-function" or (
                    key == "partial-update.remove-record-on-sequence-group" and options.given(key)):
                raise options.refuse(key, "merge-engine partial-update with sequence groups or aggregate functions "
                                          "is not implemented")


def _check_sequence_field(options: TableOptions, shape: TableColumns, engine: str) -> None:
    fields = list(options.sequence_fields)
    if options.given("sequence.field") is None:
        return
    problem = next((f"names {f!r}, which is not a column" for f in fields if f not in shape.columns), None)
    problem = problem or next((f"names {f!r} twice" for f in fields if fields.count(f) > 1), None)
    problem = problem or next((f"names {f!r}, which has an aggregate function" for f in fields
                               if options.given(f"fields.{f}.aggregate-function")), None)
    if engine == "first-row":
        problem = problem or "cannot be used with merge-engine first-row, as in Paimon"
    if shape.cross_partition:
        problem = problem or (f"cannot be used on a cross-partition table (primary key {list(shape.primary_keys)} "
                              f"does not include all partition fields {list(shape.partition_keys)}), as in Paimon")
    if problem:
        raise options.refuse("sequence.field", problem)


def check_compaction_options(options: TableOptions) -> None:
    """What only compaction needs beyond check_options: the aggregation options it merges with."""
    if options.given("record-level.expire-time"):
        raise options.refuse("record-level.expire-time", "compaction here does not expire records")
    if options.get("merge-engine") != "aggregation":
        return
    if options.get("aggregation.remove-record-on-delete"):
        raise options.refuse("aggregation.remove-record-on-delete", "compaction of merge-engine aggregation does not "
                                                                    "implement it")
    for key, value in sorted(options.raw.items()):
        if key.startswith("fields.") and key.endswith(".sequence-group"):
            raise options.refuse(key, "compaction of merge-engine aggregation with sequence groups is not "
                                      "implemented")
        if key == "fields.default-aggregate-function" or (key.startswith("fields.")
                                                         and key.endswith(".aggregate-function")):
            check_function(options.identifier, key, value)


def function_name(name: str) -> str:
    """An aggregate function's name, Paimon's legacy names read as their new ones."""
    return AGGREGATE_ALIASES.get(name, name)


def check_function(identifier: str, option: str, name: str) -> None:
    """Refuse an aggregate function this compaction does not implement, naming table, option and function."""
    name = function_name(str(name).strip())
    if name in IMPLEMENTED_AGGREGATES:
        return
    if name == "count":
        why = "Paimon removed 'count' because it cannot be merged correctly across compactions"
    elif name in NOT_IMPLEMENTED_AGGREGATES:
        why = "compaction does not implement it"
    else:
        why = "unknown aggregate function"
    raise ValidationError(identifier, f"{why} (supported: {', '.join(IMPLEMENTED_AGGREGATES)})", option=option,
                          value=name)
