"""What a write planned for: the table's schema and options when it wrote its files. Its commit checks them
again, so that files written for one table are never committed into a table another engine (Java or Flink
Paimon, a person's ALTER) has since changed under the run — e.g. deletion vectors or a changelog producer
turned on, which change what a write must produce."""
from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_paimon.engine.errors import TableChangedError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def planned_state(table: FileStoreTable) -> dict:
    """The table state a write plans for (JSON, staged with its messages)."""
    schema = table.table_schema
    return {"schema_id": schema.id, "options": {str(k): str(v) for k, v in schema.options.items()}}


def check_unchanged(table: FileStoreTable, planned: dict | None) -> None:
    """Raise TableChangedError unless the table's latest schema is the one ``planned`` for, or that schema with
    columns added (a concurrent write's schema evolution), with the same options. ``planned`` None: a run
    staged by an earlier version, not checked."""
    if not planned:
        return
    name = table.identifier.get_full_name()
    manager = table.schema_manager
    latest = manager.latest()
    now = {str(k): str(v) for k, v in latest.options.items()}
    before = planned["options"]
    changed = [f"{k}: {before.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(before) | set(now))
               if before.get(k) != now.get(k)]
    if changed:
        raise TableChangedError(f"table {name}: table options changed after this run wrote its files "
                                f"({'; '.join(changed)}); nothing committed, re-run from bootstrap-index so the "
                                "write follows the table's options")
    if latest.id != planned["schema_id"]:
        old = manager.get_schema(planned["schema_id"])
        problem = "its schema file is gone" if old is None else _beyond_added_columns(old, latest)
        if problem:
            raise TableChangedError(f"table {name}: schema {planned['schema_id']} that this run wrote for is now "
                                    f"schema {latest.id}, and {problem}; nothing committed, re-run from "
                                    "bootstrap-index")


def _beyond_added_columns(old, new) -> str | None:
    """What changed from schema ``old`` to ``new`` other than columns added (None: nothing else)."""
    if list(old.primary_keys) != list(new.primary_keys) or list(old.partition_keys) != list(new.partition_keys):
        return "its primary or partition keys changed"
    fields = {f.id: f for f in new.fields}
    for f in old.fields:
        g = fields.get(f.id)
        if g is None or g.name != f.name or str(g.type) != str(f.type):
            return f"column {f.name} ({f.type}) was dropped, renamed or changed type"
    return None
