"""Staged commit messages: durable, written once per attempt, invisible until the commit task commits them."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pypaimon.write.commit_message import CommitMessage
from pypaimon.write.commit_message_serializer import deserialize_commit_message, serialize_commit_message

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.errors import MissingFileError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

@dataclass
class Staged:
    table: str
    base_snapshot_id: int | None
    commit_user: str
    commit_identifier: int
    messages: list[CommitMessage]
    extra: dict = field(default_factory=dict)  # counters and index hand-over, for the commit task
    # the base snapshot (engine/snapshot/history.py) and the table state the files were written for
    # (commit/table_state.py); None in staging of an earlier version
    base_snapshot_fingerprint: str | None = None
    planned: dict | None = None


def runs(table_staging: str) -> list[str]:
    """The staging directory of each run of a table (``layout.staging_dir(root, table)``)."""
    return [storage.join(table_staging, name) for name in storage.list_dir(table_staging)
            if storage.is_dir(storage.join(table_staging, name))]


def abandoned(run_staging: str, now_s: float, retention_s: float) -> bool:
    """The one definition: a run's staging is abandoned when nothing under it (its staged.json, written last,
    or the shard files a run still writing has put there) changed for longer than the retention. Its commit
    task would have run by then; the commit drops such staging, orphan removal too, and stops protecting the
    data files it names."""
    return now_s - storage.newest_mtime(run_staging) > retention_s


def encode_message(table: FileStoreTable, message: CommitMessage) -> bytes:
    return serialize_commit_message(message, table.partition_keys_fields)


def decode_message(table: FileStoreTable, data: bytes) -> CommitMessage:
    return deserialize_commit_message(data, table.partition_keys_fields, table.trimmed_primary_keys_fields)


def stage(table: FileStoreTable, staging_uri: str, staged: Staged, encoded_messages: list[bytes]) -> str:
    """Publish the staged commit atomically; returns the staged file's URI."""
    doc = {"table": staged.table, "base_snapshot_id": staged.base_snapshot_id, "commit_user": staged.commit_user,
           "commit_identifier": staged.commit_identifier, "extra": staged.extra,
           "base_snapshot_fingerprint": staged.base_snapshot_fingerprint, "planned": staged.planned,
           "messages": [base64.b64encode(m).decode() for m in encoded_messages]}
    uri = layout.staged_file(staging_uri)
    storage.write_bytes_atomic(uri, json.dumps(doc).encode())
    return uri


def read_staged(staging_uri: str) -> dict | None:
    """The run's staged.json as written (messages still encoded); None if the run staged nothing (yet)."""
    uri = layout.staged_file(staging_uri)
    return json.loads(storage.read_bytes(uri)) if storage.exists(uri) else None


def load(table: FileStoreTable, staging_uri: str) -> Staged:
    doc = read_staged(staging_uri)
    if doc is None:
        raise FileNotFoundError(f"nothing staged at {staging_uri}")
    messages = [decode_message(table, base64.b64decode(m)) for m in doc["messages"]]
    return Staged(doc["table"], doc["base_snapshot_id"], doc["commit_user"], doc["commit_identifier"],
                  messages, doc.get("extra", {}), doc.get("base_snapshot_fingerprint"), doc.get("planned"))


def data_file_paths(table: FileStoreTable, messages: list[CommitMessage]) -> list[str]:
    """Where the new data files of ``messages`` live: data, changelog and compacted files (a deletion-vector
    write's compact increment), all next to each other."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    return list(dict.fromkeys(
        f.external_path or canonical_data_file_path(table, tuple(m.partition), m.bucket, f.file_name)
        for m in messages for f in [*m.new_files, *m.changelog_files, *m.compact_after, *m.compact_changelog_files]))


def check_files_exist(table: FileStoreTable, messages, what: str = "staged data file",
                      rerun: str = "bootstrap-index") -> None:
    """Refuse to commit a snapshot whose new data files are gone (e.g. removed as orphans by a removal whose
    older_than was shorter than the write or compaction). Called by every attempt, just before it builds its
    snapshot."""
    for path in data_file_paths(table, messages):
        if not table.file_io.exists(path):
            raise MissingFileError(f"table {table.identifier.get_full_name()}: {what} {path} is missing (removed "
                                   f"as an orphan?); nothing committed, re-run from {rerun}")
