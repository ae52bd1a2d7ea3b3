"""Catalog and table handles: open a table, or create it from a declared schema, never silently change it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
from pypaimon import Schema
from pypaimon.catalog.catalog_exception import TableNotExistException
from pypaimon.schema.data_types import DataTypeParser, PyarrowFieldParser

from airflow_paimon.engine.table.catalog import open_catalog
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.table.schema_evolution import NONE as NO_EVOLUTION, check_mode as schema_evolution_mode
from airflow_paimon.engine.table.schema_evolution import declared_columns, evolve, plan_for_declared
from airflow_paimon.engine.options.checks import TableColumns, check_options, check_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


@dataclass(frozen=True)
class TableSpec:
    """A declared table: ordered (column, Paimon SQL type) pairs, keys and Paimon table options."""

    columns: list[tuple[str, str]]
    primary_keys: list[str] = field(default_factory=list)
    partition_keys: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict) -> "TableSpec":
        cols = d["columns"]
        pairs = list(cols.items()) if isinstance(cols, dict) else [tuple(c) if not isinstance(c, dict)
                                                                     else (c["name"], c["type"]) for c in cols]
        return cls([(str(n), str(t)) for n, t in pairs], list(d.get("primary_keys", [])),
                   list(d.get("partition_keys", [])), {str(k): str(v) for k, v in d.get("options", {}).items()})

    def to_dict(self) -> dict:
        return {"columns": [list(c) for c in self.columns], "primary_keys": self.primary_keys,
                "partition_keys": self.partition_keys, "options": self.options}

    def paimon_types(self) -> list:
        """The declared Paimon types, primary-key columns NOT NULL (as Paimon makes them)."""
        return [DataTypeParser.parse_atomic_type_sql_string(t + (" NOT NULL" if n in self.primary_keys else ""))
                for n, t in self.columns]

    def arrow_schema(self) -> pa.Schema:
        fields = []
        for name, type_sql in self.columns:
            paimon_type = DataTypeParser.parse_atomic_type_sql_string(type_sql)
            fields.append(pa.field(name, PyarrowFieldParser.from_paimon_type(paimon_type),
                                   nullable=name not in self.primary_keys))
        return pa.schema(fields)


def get_table(catalog_options: dict, identifier: str):
    """The table, or a clear error naming it when it does not exist."""
    validate_identifier(identifier)
    try:
        return open_catalog(catalog_options).get_table(identifier)
    except TableNotExistException:
        raise ValidationError(identifier, "table does not exist and no schema was declared to create it") from None


def get_or_create_table(catalog_options: dict, identifier: str, spec: TableSpec | None,
                        schema_evolution: str | None = None):
    """Open the table; create it from ``spec`` on first use; refuse a ``spec`` the table does not match —
    unless ``schema_evolution`` lets the table grow to it (engine/table/schema_evolution.py)."""
    validate_identifier(identifier)
    catalog = open_catalog(catalog_options)
    try:
        table = catalog.get_table(identifier)
    except TableNotExistException:
        if spec is None:
            raise ValidationError(identifier, "table does not exist and no schema was declared to create it") from None
        _check_spec(identifier, spec)
        database = identifier.split(".", 1)[0]
        catalog.create_database(database, True)
        schema = Schema.from_pyarrow_schema(spec.arrow_schema(), partition_keys=spec.partition_keys,
                                            primary_keys=spec.primary_keys, options=spec.options)
        for f, paimon_type in zip(schema.fields, spec.paimon_types()):
            f.type = paimon_type  # as declared: arrow has no VARCHAR(n)/CHAR(n), it would make them STRING
        catalog.create_table(identifier, schema, True)  # ignore_if_exists: a concurrent creator is fine
        table = catalog.get_table(identifier)
    if spec is not None:
        mode = schema_evolution_mode(identifier, schema_evolution)
        if mode != NO_EVOLUTION:
            _check_spec(identifier, spec)
            _refuse(identifier, _key_and_option_problems(table, spec))  # never altered: refused before any change
            declared = declared_columns(spec.columns)
            table = evolve(catalog_options, identifier, table,
                           lambda t: plan_for_declared(t, identifier, declared, mode))  # checks every column
        else:
            _check_matches(identifier, table, spec)
    check_table(table)  # its own options, maybe set by another engine
    return table


def _check_spec(identifier: str, spec: TableSpec) -> None:
    names = [c for c, _ in spec.columns]
    for key in spec.primary_keys + spec.partition_keys:
        if key not in names:
            raise ValidationError(identifier, "declared key is not a declared column", column=key)
    types = {}
    for name, type_sql in spec.columns:
        try:
            types[name] = str(DataTypeParser.parse_atomic_type_sql_string(type_sql))
        except Exception as e:  # noqa: BLE001 - pypaimon's type parser raises several types
            raise ValidationError(identifier, f"unknown Paimon type: {e}", column=name, value=type_sql) from None
    check_options(identifier, spec.options, TableColumns(types, tuple(spec.primary_keys), tuple(spec.partition_keys)))


def _check_matches(identifier: str, table: FileStoreTable, spec: TableSpec) -> None:
    """An existing table must be exactly the declared one; a difference is an error, never an ALTER."""
    actual_cols = [(f.name, str(f.type).replace(" NOT NULL", "")) for f in table.table_schema.fields]
    declared = [(n, str(DataTypeParser.parse_atomic_type_sql_string(t)).replace(" NOT NULL", ""))
                for n, t in spec.columns]
    problems = []
    if actual_cols != declared:
        problems.append(f"columns {actual_cols} != declared {declared}")
    _refuse(identifier, problems + _key_and_option_problems(table, spec))


def _key_and_option_problems(table: FileStoreTable, spec: TableSpec) -> list[str]:
    problems = []
    if list(table.primary_keys) != spec.primary_keys:
        problems.append(f"primary keys {list(table.primary_keys)} != declared {spec.primary_keys}")
    if list(table.partition_keys) != spec.partition_keys:
        problems.append(f"partition keys {list(table.partition_keys)} != declared {spec.partition_keys}")
    actual_opts = table.table_schema.options
    for k, v in spec.options.items():
        if str(actual_opts.get(k)) != v:
            problems.append(f"option {k}={actual_opts.get(k)!r} != declared {v!r}")
    return problems


def _refuse(identifier: str, problems: list[str]) -> None:
    if problems:
        raise ValidationError(identifier, "existing table differs from the declared schema: " + "; ".join(problems))
