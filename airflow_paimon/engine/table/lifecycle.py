"""A table's lifecycle without Spark: create it, alter it, tag a snapshot — each idempotent, so a retry that
finds the work done changes nothing and reports the same result. Rollback: engine/maintenance/rollback.py."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pypaimon.catalog.catalog_exception import TableNotExistException
from pypaimon.schema.data_types import DataTypeParser
from pypaimon.schema.schema_change import Move, SchemaChange

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.snapshot.history import check_base
from airflow_paimon.engine.files.layout import check_segment
from airflow_paimon.engine.table.catalog import open_catalog
from airflow_paimon.engine.table.schema_commit import alter_exclusively
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.table.table_alter import AlterPlan, plan_alter, resulting_options
from airflow_paimon.engine.files.scan import live_entries
from airflow_paimon.engine.options.checks import TableColumns, check_options
from airflow_paimon.engine.files.deletion_vectors import check_no_level_0
from airflow_paimon.engine.options import TableOptions

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def create_table(catalog_options: dict, identifier: str, spec: TableSpec) -> dict:
    """Create the table from ``spec``; an existing table equal to it is fine (``created: False``), a different
    one is refused (engine/table/table.py)."""
    try:
        open_catalog(catalog_options).get_table(identifier)
        existed = True
    except TableNotExistException:
        existed = False
    table = get_or_create_table(catalog_options, identifier, spec)
    return {"table": identifier, "created": not existed, "schema_id": table.table_schema.id}


def alter_table(catalog_options: dict, identifier: str, set_options: dict | None = None,
                reset_options: list | None = None, add_columns: list | None = None,
                widen_columns: list | None = None) -> dict:
    """Apply what of the ALTER the table does not have yet, checked first (engine/table/table_alter.py); nothing to
    apply → no new schema (``changed: False``)."""
    from pypaimon.common.options.core_options import CoreOptions

    def missing(table: FileStoreTable) -> AlterPlan:  # what of the ALTER the table, as it is now, does not have
        known = TableColumns.of_table(table)
        options = {str(k): str(v) for k, v in table.table_schema.options.items()}
        plan = plan_alter(identifier, known.columns, list(known.primary_keys), list(known.partition_keys), options,
                          set_options, reset_options, add_columns, widen_columns,
                          immutable=frozenset(CoreOptions.IMMUTABLE_OPTIONS))
        if plan:
            columns = {**known.columns, **dict(plan.add_columns), **dict(plan.widen_columns)}
            check_options(identifier, resulting_options(options, plan),
                          TableColumns(columns, known.primary_keys, known.partition_keys))
            # turned on: files already at level 0 would vanish from every read
            if TableOptions.parse(identifier, plan.set_options).deletion_vectors:
                check_no_level_0(identifier, (e.file.level for e in live_entries(
                    table, table.snapshot_manager().get_latest_snapshot())))
        return plan

    table = get_table(catalog_options, identifier)
    plan, schema_id = missing(table), table.table_schema.id
    if plan:
        try:  # planned again on top of any schema another writer creates meanwhile (engine/table/schema_commit.py)
            table, created = alter_exclusively(open_catalog(catalog_options), identifier,
                                               lambda t: _schema_changes(identifier, missing(t)))
        except (RuntimeError, ValueError) as e:  # pypaimon's own checks, after ours
            raise ValidationError(identifier, f"Paimon refused the ALTER ({'; '.join(plan.describe())}): "
                                              f"{e.__cause__ or e}") from None
        # the schema this ALTER created (a racing writer's may be newer already)
        schema_id = created if created is not None else table.table_schema.id
    return {"table": identifier, "schema_id": schema_id, "changed": bool(plan), "changes": plan.describe()}


def _schema_changes(identifier: str, plan: AlterPlan) -> list:
    def paimon_type(name: str, type_sql: str):
        try:
            return DataTypeParser.parse_atomic_type_sql_string(type_sql)
        except Exception as e:  # noqa: BLE001 - pypaimon's type parser raises several types
            raise ValidationError(identifier, f"unknown Paimon type: {e}", column=name, value=type_sql) from None

    return ([SchemaChange.set_option(k, v) for k, v in plan.set_options.items()]
            + [SchemaChange.remove_option(k) for k in plan.reset_options]
            + [SchemaChange.add_column(n, paimon_type(n, t), move=Move.last(n)) for n, t in plan.add_columns]
            + [SchemaChange.update_column_type(n, paimon_type(n, t), keep_nullability=True)
               for n, t in plan.widen_columns])


def check_tag_name(identifier: str, tag: str) -> str:
    """A tag name is a file name (``tag/tag-<name>``): one safe path segment, and not a number (Paimon reads a
    number as a snapshot id in time travel)."""
    if not isinstance(tag, str) or not tag.strip():
        raise ValidationError(identifier, "a tag needs a name", value=tag)
    try:
        check_segment(tag)
    except ValidationError:
        raise ValidationError(identifier, "tag name must be ASCII letters, digits, '_', '-', '.', '='",
                              value=tag) from None
    if tag.isdigit():
        raise ValidationError(identifier, "tag name must not be a number (it would read as a snapshot id)",
                              value=tag)
    return tag


def create_tag(catalog_options: dict, identifier: str, tag: str, snapshot_id: int | None = None,
               snapshot_fingerprint: str | None = None) -> dict:
    """Tag ``snapshot_id`` (None: the latest snapshot) as ``tag``, written as Paimon writes it
    (``<table>/tag/tag-<name>``, the snapshot's JSON). The tag already on that snapshot is success
    (``created: False``); the name on another snapshot is refused, naming both. ``snapshot_fingerprint``: the
    snapshot must be that one (engine/snapshot/history.py), not a later one that took its id after a rollback."""
    check_tag_name(identifier, tag)
    table = get_table(catalog_options, identifier)
    snapshots = table.snapshot_manager()
    snapshot = snapshots.get_latest_snapshot() if snapshot_id is None else snapshots.get_snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise ValidationError(identifier, "the table has no snapshot to tag" if snapshot_id is None else
                              f"snapshot {snapshot_id} does not exist (never committed, expired or rolled back)",
                              value=tag)
    check_base(table, snapshot.id, snapshot_fingerprint, started_at="the commit to tag")
    tags = table.tag_manager()
    existing = tags.get(tag)
    if existing is not None:
        if existing.id != snapshot.id:
            raise ValidationError(identifier, f"tag exists on snapshot {existing.id}, not on snapshot {snapshot.id}; "
                                              "delete it or choose another name", value=tag)
        return {"table": identifier, "tag": tag, "snapshot_id": snapshot.id, "created": False}
    tags.create_tag(snapshot, tag)
    return {"table": identifier, "tag": tag, "snapshot_id": snapshot.id, "created": True}
