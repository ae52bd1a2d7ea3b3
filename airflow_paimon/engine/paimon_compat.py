"""The seam between the engine and pypaimon's private members: the one place that names them.

pypaimon has no public API to roll-write a sorted key-value table into files, to commit prepared manifest
entries (COMPACT, OVERWRITE) or to create a snapshot file exclusively, so the engine calls or overrides a few
private members. Each call goes through a function here; the subclasses that override private methods stay with
their code (GuardedCommit in engine/commit/snapshot_commit.py, KeyValueFileWriter in engine/write/kv_writer.py)
and list what they rely on in ``REQUIRED``. tests/unit/project/test_paimon_compat.py exercises every entry against the
installed pypaimon, so an upgrade that renames or reshapes one fails there, naming it. pyproject pins pypaimon
to the minor these were checked on (>=2.1.0,<2.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


@dataclass(frozen=True)
class Private:
    """One private pypaimon member the engine uses."""

    owner: str                    # "module:Class" that defines it
    name: str
    parameters: tuple[str, ...]   # parameter names the engine passes by name or receives in its override
    used_by: str                  # where, and how: call (through the function named) or override


REQUIRED = (
    Private("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter", "_roll_write", ("data",),
            "call roll_write: engine/write/bucket_writer.py, engine/compact/rewrite.py"),
    Private("pypaimon.write.file_store_commit:FileStoreCommit", "_try_commit",
            ("commit_kind", "commit_identifier", "commit_entries_plan", "detect_conflicts", "allow_rollback",
             "index_deletes", "index_adds", "changelog_entries", "snapshot_properties", "allow_empty_commit"),
            "call try_commit: engine/compact/commit.py, engine/commit/overwrite.py; "
            "override: GuardedCommit (engine/commit/snapshot_commit.py), commit_entries_plan by keyword"),
    Private("pypaimon.write.file_store_commit:FileStoreCommit", "_overwrite_changes_provider",
            ("partition_filter", "commit_messages"), "call overwrite_changes_provider: engine/commit/overwrite.py"),
    Private("pypaimon.write.file_store_commit:FileStoreCommit", "_overwrite_hash_index_deletes",
            ("partition_filter", "deletes"), "call overwrite_hash_index_deletes: engine/commit/overwrite.py"),
    Private("pypaimon.write.file_store_commit:FileStoreCommit", "_try_commit_once", ("latest_snapshot",),
            "override: GuardedCommit (engine/commit/snapshot_commit.py); swaps self.manifest_list_manager for "
            "the attempt, reads result.is_success() and result.commit_result_may_be_uncertain"),
    Private("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter", "_write_data_to_file", ("data",),
            "override: KeyValueFileWriter (engine/write/kv_writer.py), called by _roll_write once per file; "
            "its __init__ extends self.parquet_writer_options"),
    Private("pypaimon.write.writer.key_value_data_writer:KeyValueDataWriter", "_create_data_file_meta", (),
            "override: KeyValueFileWriter (engine/write/kv_writer.py), called by _write_data_to_file"),
    Private("pypaimon.filesystem.local_file_io:LocalFileIO", "_to_file", ("path",),
            "call local_file: the snapshot file's local path (engine/commit/snapshot_commit.py)"),
    Private("pypaimon.snapshot.renaming_snapshot_commit:RenamingSnapshotCommit", "_commit_latest_hint",
            ("snapshot_id",), "call commit_latest_hint: ExclusiveSnapshotCommit (engine/commit/snapshot_commit.py)"),
    Private("pypaimon.schema.schema_manager:SchemaManager", "_generate_table_schema", ("old_table_schema", "changes"),
            "call next_schema: engine/table/schema_commit.py"),
    Private("pypaimon.schema.schema_manager:SchemaManager", "_to_schema_path", ("schema_id",),
            "call schema_path: engine/table/schema_commit.py"),
    Private("pypaimon.manifest.manifest_file_manager:ManifestFileManager", "_get_value_stats_fields",
            ("file_dict", "file_schema"), "wrapped by read_older_manifests (engine/table/catalog.py)"),
)


_older_manifests = False


def read_older_manifests() -> None:
    """Manifests of Paimon before 1.0 (Java Paimon 0.9, 1.0 snapshots) have no ``_VALUE_STATS_COLS``: their value
    stats cover every field, which pypaimon reads from a None there, but it raises KeyError on the missing key.
    Wraps pypaimon's reader (once per process) to take the missing key as None, so that we read and keep writing
    tables such writers wrote or compacted."""
    global _older_manifests
    if _older_manifests:
        return
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    original = ManifestFileManager._get_value_stats_fields

    def value_stats_fields(self, file_dict: dict, file_schema):
        file_dict.setdefault("_VALUE_STATS_COLS", None)  # a copy of the record's, made per entry by pypaimon
        return original(self, file_dict, file_schema)

    ManifestFileManager._get_value_stats_fields = value_stats_fields
    _older_manifests = True


def roll_write(writer, data) -> None:
    """Write ``data`` (key-value layout, sorted, one row per key) as files of at most the target size;
    ``writer.committed_files`` then holds their metadata."""
    writer._roll_write(data)


def try_commit(committer, *, commit_kind: str, commit_identifier: int, commit_entries_plan, **options) -> None:
    """FileStoreCommit's commit loop for prepared entries: ``commit_entries_plan(latest_snapshot)`` gives the
    manifest entries of each attempt; retried on top of the latest snapshot. ``options``: detect_conflicts,
    allow_rollback, index_deletes, index_adds, changelog_entries, snapshot_properties, allow_empty_commit."""
    committer._try_commit(commit_kind=commit_kind, commit_identifier=commit_identifier,
                          commit_entries_plan=commit_entries_plan, **options)


def overwrite_changes_provider(committer, partition_filter, commit_messages):
    """pypaimon's OverwriteChangesProvider: ``.provide(latest)`` deletes the live files ``partition_filter``
    matches and adds those of ``commit_messages``."""
    return committer._overwrite_changes_provider(partition_filter, commit_messages)


def overwrite_hash_index_deletes(committer, partition_filter) -> list:
    """The DELETE index entries of the HASH index files of the partitions ``partition_filter`` matches
    (dynamic-bucket tables; none otherwise)."""
    return committer._overwrite_hash_index_deletes(partition_filter, [])


def local_file(file_io, path: str) -> Path:
    """The local ``Path`` a LocalFileIO reads and writes for ``path`` (a URI or a plain path)."""
    return file_io._to_file(path)


def commit_latest_hint(snapshot_manager, snapshot_id: int) -> None:
    """Update the table's LATEST hint file as pypaimon's RenamingSnapshotCommit does (best effort)."""
    from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit

    RenamingSnapshotCommit(snapshot_manager)._commit_latest_hint(snapshot_id)


def next_schema(schema_manager, latest, changes):
    """The TableSchema ``changes`` make of ``latest`` (id latest.id + 1), as pypaimon's commit_changes builds it."""
    return schema_manager._generate_table_schema(latest, changes)


def schema_path(schema_manager, schema_id: int) -> str:
    """Where schema ``schema_id`` lives (``<table>/schema/schema-<id>``)."""
    return schema_manager._to_schema_path(schema_id)


def table_at_schema(table: FileStoreTable, schema):
    """``table`` with its columns as of ``schema`` (an earlier TableSchema of it): what a Paimon writer opened
    before a later schema change writes with."""
    from pypaimon.table.file_store_table import FileStoreTable

    return FileStoreTable(table.file_io, table.identifier, table.table_path, schema, table.catalog_environment)
