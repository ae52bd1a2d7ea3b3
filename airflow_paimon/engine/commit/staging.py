"""Staged commit messages: durable, written once per attempt, invisible until the commit task commits them."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

from pypaimon.write.commit_message import CommitMessage
from pypaimon.write.commit_message_serializer import deserialize_commit_message, serialize_commit_message

from airflow_paimon.engine import layout, storage

@dataclass
class Staged:
    table: str
    base_snapshot_id: int | None
    commit_user: str
    commit_identifier: int
    messages: list[CommitMessage]
    extra: dict = field(default_factory=dict)  # counters and index hand-over, for the commit task


def encode_message(table, message: CommitMessage) -> bytes:
    return serialize_commit_message(message, table.partition_keys_fields)


def decode_message(table, data: bytes) -> CommitMessage:
    return deserialize_commit_message(data, table.partition_keys_fields, table.trimmed_primary_keys_fields)


def stage(table, staging_uri: str, staged: Staged, encoded_messages: list[bytes]) -> str:
    """Publish the staged commit atomically; returns the staged file's URI."""
    doc = {"table": staged.table, "base_snapshot_id": staged.base_snapshot_id, "commit_user": staged.commit_user,
           "commit_identifier": staged.commit_identifier, "extra": staged.extra,
           "messages": [base64.b64encode(m).decode() for m in encoded_messages]}
    uri = layout.staged_file(staging_uri)
    storage.write_bytes_atomic(uri, json.dumps(doc).encode())
    return uri


def load(table, staging_uri: str) -> Staged:
    doc = json.loads(storage.read_bytes(layout.staged_file(staging_uri)))
    messages = [decode_message(table, base64.b64decode(m)) for m in doc["messages"]]
    return Staged(doc["table"], doc["base_snapshot_id"], doc["commit_user"], doc["commit_identifier"],
                  messages, doc.get("extra", {}))


def data_file_paths(table, messages: list[CommitMessage]) -> list[str]:
    """Where the new data files of ``messages`` live."""
    from pypaimon.utils.file_store_path_factory import canonical_data_file_path

    return [f.external_path or canonical_data_file_path(table, tuple(m.partition), m.bucket, f.file_name)
            for m in messages for f in m.new_files]
