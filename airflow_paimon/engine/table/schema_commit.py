"""A new schema file, created only if no writer in any process created that schema id first.

pypaimon's SchemaManager.commit checks that ``schema-N`` is absent and then renames its file there (under an
in-process lock on a local file system; on an object store a rename is a copy that replaces the target): two
processes evolving a table at once can both be told they committed ``schema-N``, and the one whose file is
replaced loses its column while its data files name schema N. Here the file is created as snapshot files are
(storage.write_bytes_if_absent: a hard link, or a conditional PUT on S3); the loser re-reads the table and
plans again on top of the winner's schema."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from pypaimon.catalog.filesystem_catalog import FileSystemCatalog
from pypaimon.common.json_util import JSON
from pypaimon.filesystem.local_file_io import LocalFileIO

from airflow_paimon.engine import paimon_compat
from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import TransientError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 20  # each lost race means another writer's schema landed: progress, not a livelock


def alter_exclusively(catalog, identifier: str, plan: Callable[[FileStoreTable], list]
                      ) -> tuple[FileStoreTable, int | None]:
    """Apply ``plan(table)`` (the SchemaChanges still missing, judged on the table as it is) as one new schema;
    (the table handle after it, the id of the schema this call created — None when nothing was missing). The
    handle may already be at a later schema of another writer. Raises what pypaimon raises for a change it
    refuses (ValueError / RuntimeError), before anything is written."""
    for _ in range(MAX_ATTEMPTS):
        table = catalog.get_table(identifier)
        changes = plan(table)
        if not changes:
            return table, None
        if not isinstance(catalog, FileSystemCatalog):  # a REST catalog's server orders schema changes
            catalog.alter_table(identifier, changes)
            table = catalog.get_table(identifier)
            return table, table.table_schema.id
        manager = table.schema_manager
        new = paimon_compat.next_schema(manager, manager.latest(), changes)
        path = paimon_compat.schema_path(manager, new.id)
        if isinstance(manager.file_io, LocalFileIO):  # file:// URIs: the local path
            path = str(paimon_compat.local_file(manager.file_io, path))
        if storage.write_bytes_if_absent(path, JSON.to_json(new, indent=2).encode("utf-8")):
            return catalog.get_table(identifier), new.id
        log.info("table %s: schema %s was created by another writer meanwhile; planning again on it",
                 identifier, new.id)
    raise TransientError(f"table {identifier}: the schema changed {MAX_ATTEMPTS} times while this task evolved "
                         "it; retry")
