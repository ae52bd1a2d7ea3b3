"""Schema evolution on write: a source (or declared) column the table lacks becomes a new nullable column at
the end; with ``widen`` a column's type also grows the ways Paimon reads old files back (INT → BIGINT,
FLOAT → DOUBLE, VARCHAR(n) → VARCHAR(m > n) / STRING, DECIMAL(p, s) → DECIMAL(q > p, s)).

Never dropped, renamed or narrowed, and keys, partition keys and options never change: each such difference
is refused with a ValidationError naming the table and the column, before the table is altered. The change
is one new Paimon schema (catalog ``alter_table``), planned against the table's latest schema — a retried
task, or a concurrent run making the same change, finds the columns there and has nothing to do.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import pyarrow as pa
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser
from pypaimon.schema.schema_change import SchemaChange

from airflow_paimon.engine.table.catalog import open_catalog
from airflow_paimon.engine.table.schema_commit import alter_exclusively
from airflow_paimon.engine.table.table_alter import parse_type, widens
from airflow_paimon.engine.errors import CorruptTableError, ValidationError
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.jobs.specs import SCHEMA_EVOLUTIONS

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

NONE, ADD_COLUMNS, WIDEN = SCHEMA_EVOLUTIONS
# Names Paimon's data files or this provider's pipelines use for their own columns
_RESERVED = ("_KEY_", "_SEQUENCE_NUMBER", "_VALUE_KIND", "_ROW_ID", "_key", "_order", "_bucket", "_row_kind")


@dataclass(frozen=True)
class Column:
    """A wanted column: its name and Paimon type (nullability ignored)."""
    name: str
    type: object  # pypaimon DataType; None: the source's type has none (refused only if the column is new)
    source_type: str = ""

    @property
    def type_sql(self) -> str:
        return _sql(self.type)


def check_mode(identifier: str, mode: str | None) -> str:
    mode = mode or NONE
    if mode not in SCHEMA_EVOLUTIONS:
        raise ValidationError(identifier, f"schema_evolution must be one of {list(SCHEMA_EVOLUTIONS)}", value=mode)
    return mode


def source_columns(identifier: str, schema: pa.Schema, skip: tuple[str, ...] = ()) -> list[Column]:
    """The columns of a source's Arrow schema as Paimon types; ``skip``: not table columns (the row kind)."""
    skipped = {s.lower() for s in skip if s}
    columns, seen = [], set()
    for f in schema:
        if f.name.lower() in skipped:
            continue
        if f.name.lower() in seen:  # Spark matches names case-insensitively: one column, twice
            raise ValidationError(identifier, "source has this column twice (names differ only in case)",
                                  column=f.name)
        seen.add(f.name.lower())
        shown = ((f.metadata or {}).get(b"spark_type") or str(f.type).encode()).decode()
        try:
            columns.append(Column(f.name, PyarrowFieldParser.to_paimon_type(f.type, True), shown))
        except ValueError:
            columns.append(Column(f.name, None, shown))
    return columns


def declared_columns(columns: list[tuple[str, str]]) -> list[Column]:
    return [Column(n, DataTypeParser.parse_atomic_type_sql_string(t)) for n, t in columns]


def plan_for_source(table: FileStoreTable, identifier: str, columns: list[Column], mode: str,
                    planned: list[str] | None = None) -> list:
    """The schema changes that let a source with ``columns`` be written to ``table``. The source's types
    only widen value columns (a source type has no VARCHAR length: a string column never widens one);
    a narrower or other source type is cast per row as without evolution. ``planned``: the table's columns
    when the run first planned (default: all of them); the source must have each of those, a column another
    writer added since it may lack."""
    by_name = _table_columns(table)
    wanted = {c.name.lower(): c for c in columns}
    required = by_name if planned is None else {n.lower() for n in planned} & by_name.keys()
    for name in required:
        if name not in wanted:
            raise ValidationError(identifier, "source lacks this table column; schema evolution adds columns, "
                                              "it never drops or renames one", column=by_name[name].name)
    changes = []
    keys = {k.lower() for k in list(table.primary_keys) + list(table.partition_keys)}
    for c in columns:
        existing = by_name.get(c.name.lower())
        if existing is None:
            changes.append(_add(identifier, c))
        elif (mode == WIDEN and c.type is not None and c.name.lower() not in keys and _widens(existing.type, c.type)
              and parse_type(_sql(c.type)).root != "VARCHAR"):
            changes.append(SchemaChange.update_column_type(existing.name, _nullable(c.type), keep_nullability=True))
    return changes


def plan_for_declared(table: FileStoreTable, identifier: str, columns: list[Column], mode: str) -> list:
    """The schema changes that make ``table`` at least the declared one (keys, partition keys and options
    are compared by the caller): declared columns it lacks are added, with ``widen`` declared wider types
    applied. The declaration may lag behind what writes did since the table was created: a column added
    since may be missing from it, a column widened since may be declared with any type from its first one.
    Refused: leaving out a column the table was created with (a drop or rename), a type narrower than the
    column's first type or of another kind, another key type."""
    by_name = {f.name: f for f in table.table_schema.fields}
    first = {f.id: f for f in _first_schema(table).fields}
    declared = {c.name for c in columns}
    for name, f in by_name.items():
        if name not in declared and f.id in first:
            raise ValidationError(identifier, "table column is not declared; schema evolution adds columns, "
                                              "it never drops or renames one", column=name)
    keys = set(table.primary_keys) | set(table.partition_keys)
    changes = []
    for c in columns:
        existing = by_name.get(c.name)
        if existing is None:
            changes.append(_add(identifier, c))
            continue
        old, new = _sql(existing.type), c.type_sql
        if old == new:
            continue
        if c.name in keys:
            raise ValidationError(identifier, f"key column type {old} cannot change to {new}", column=c.name,
                                  value=new)
        if _widens(existing.type, c.type):
            if mode != WIDEN:
                raise ValidationError(identifier, f"column type {old} differs from the declared {new}; widening "
                                                  "it needs schema_evolution='widen'", column=c.name, value=new)
            changes.append(SchemaChange.update_column_type(c.name, _nullable(c.type), keep_nullability=True))
            continue
        was = first.get(existing.id)
        widened_since = was is not None and (_sql(was.type) == new or _widens(was.type, c.type)) \
            and _widens(c.type, existing.type)
        if not widened_since:
            raise ValidationError(identifier, f"column type {old} cannot change to {new}: schema evolution only "
                                              "widens a type, it never narrows or converts one", column=c.name,
                                  value=new)
    return changes


def _first_schema(table: FileStoreTable):
    """The oldest schema the table still has (its creation, unless expired)."""
    schemas = table.schema_manager.list_all()
    return schemas[0] if schemas else table.table_schema


def evolve_for_source(spec, table: FileStoreTable, source_schema, planned: list[str] | None = None,
                      record: Callable[[list[str]], None] | None = None) -> tuple[FileStoreTable, tuple[str, ...]]:
    """The write's table, evolved to the source's columns as ``spec.schema_evolution`` allows (before
    anything is staged), and the table columns the source lacks because another writer added them after
    this run first planned (its rows read them as null). ``source_schema()``: the source's Arrow schema,
    asked for only when evolving; ``planned``: the columns this run first planned against (an earlier
    attempt's); else the table's now, handed to ``record`` before the table is altered, so that every later
    attempt of the run judges its source against the same columns (engine/write/planned_columns.py)."""
    mode = check_mode(spec.table, spec.schema_evolution)
    if mode == NONE or source_schema is None:
        return table, ()
    row_kind = spec.row_kind_column or TableOptions.of(table).row_kind_field
    not_table = (row_kind,) if row_kind and row_kind.lower() not in _table_columns(table) else ()
    columns = source_columns(spec.table, source_schema(), skip=not_table)
    if planned is None:
        planned = [f.name for f in table.table_schema.fields]
        plan_for_source(table, spec.table, columns, mode, planned)  # refused before anything is recorded
        if record is not None:
            record(planned)
    table = evolve(spec.catalog_options, spec.table, table,
                   lambda t: plan_for_source(t, spec.table, columns, mode, planned))
    have = {c.name.lower() for c in columns}
    absent = tuple(f.name for f in table.table_schema.fields if f.name.lower() not in have)
    if absent:
        log.info("table %s: columns %s were added by another writer after this run planned its write (on columns "
                 "%s); its rows read them as null", spec.table, list(absent), planned)
    return table, absent


def evolve(catalog_options: dict, identifier: str, table: FileStoreTable, plan) -> object:
    """Apply ``plan(table)``'s changes as one new schema; the table handle at the schema written with.
    Planned again on the table as it is whenever another writer's schema lands first (engine/table/schema_commit.py):
    a retry, or a racing writer that made the same change, leaves nothing to do."""
    changes = plan(table)
    if not changes:
        return table
    try:
        table, _ = alter_exclusively(open_catalog(catalog_options), identifier, plan)
    except ValueError as e:  # Paimon refuses the change itself
        raise ValidationError(identifier, f"Paimon refuses the schema change: {e}",
                              column=_column_of(changes[0])) from None
    log.info("table %s evolved to schema %s: %s", identifier, table.table_schema.id,
             "; ".join(_describe(c) for c in changes))
    return table


def file_column_names(table: FileStoreTable, schema_id: int) -> dict[str, str | None]:
    """For a data file written under schema ``schema_id``: each current column's name in that file, by
    Paimon field id (None: added since), ``_KEY_`` columns included. Empty for the current schema."""
    if schema_id == table.table_schema.id:
        return {}
    old = table.schema_manager.get_schema(schema_id)
    if old is None:
        raise CorruptTableError(f"table {table.identifier.get_full_name()}: schema {schema_id} of a live data file is "
                                "missing")
    old_names = {f.id: f.name for f in old.fields}
    names = {}
    for f in table.table_schema.fields:
        was = old_names.get(f.id)
        names[f.name] = was
        names["_KEY_" + f.name] = None if was is None else "_KEY_" + was
    return names


# --- types ------------------------------------------------------------------------------------------------------

def _table_columns(table: FileStoreTable) -> dict:
    return {f.name.lower(): f for f in table.table_schema.fields}


def _add(identifier: str, c: Column):
    if c.type is None:
        raise ValidationError(identifier, "source column type has no Paimon type to add it as", column=c.name,
                              value=c.source_type)
    if any(c.name == r or (r.endswith("_") and c.name.startswith(r)) for r in _RESERVED):
        raise ValidationError(identifier, "a new column cannot take a name Paimon or this provider uses for its "
                                          "own columns", column=c.name)
    return SchemaChange.add_column(c.name, _nullable(c.type))


def _nullable(t):
    copy = DataTypeParser.parse_data_type(t.to_dict())
    copy.nullable = True
    return copy


def _sql(t) -> str:
    return re.sub(r"\s+", " ", str(t).replace(" NOT NULL", "")).strip().upper().replace("INTEGER", "INT")


def _widens(old, new) -> bool:
    """engine/table/table_alter.py's widening rule, for pypaimon types."""
    return widens(_sql(old), _sql(new))


def _column_of(change) -> str:
    return ".".join(change.field_names)


def _describe(change) -> str:
    kind = "add column" if type(change).__name__ == "AddColumn" else "widen column"
    data_type = getattr(change, "data_type", None) or getattr(change, "new_data_type", None)
    return f"{kind} {_column_of(change)} {_sql(data_type)}"
