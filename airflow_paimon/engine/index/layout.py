"""Where a table's index lives, and its manifest: one directory per indexed snapshot.

    {index_root}/{database}.{table}/snapshot-{S}/shard-00000.sst ... manifest.json

The manifest is written last and atomically, so an index without one is incomplete and never read.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from airflow_paimon.engine import storage
from airflow_paimon.engine.index.keys import KEY_HASH_SCHEME

MANIFEST = "manifest.json"


@dataclass
class ShardMeta:
    shard: int
    file: str | None  # None: the shard holds no key
    keys: int
    bucket_counts: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class IndexManifest:
    table: str
    snapshot_id: int | None
    schema_id: int
    shards: int
    key_hash_scheme: str
    shard_meta: list[ShardMeta]

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.shard_meta)

    def shard(self, i: int) -> ShardMeta:
        return self.shard_meta[i]


def table_index_uri(index_root: str, identifier: str) -> str:
    return storage.join(index_root, identifier)


def snapshot_index_uri(index_root: str, identifier: str, snapshot_id: int | None) -> str:
    return storage.join(table_index_uri(index_root, identifier), f"snapshot-{snapshot_id or 0}")


def shard_file_name(shard: int) -> str:
    return f"shard-{shard:05d}.sst"


def write_manifest(index_uri: str, manifest: IndexManifest) -> None:
    doc = asdict(manifest)
    storage.write_bytes_atomic(storage.join(index_uri, MANIFEST), json.dumps(doc, sort_keys=True).encode())


def read_manifest(index_uri: str) -> IndexManifest | None:
    uri = storage.join(index_uri, MANIFEST)
    if not storage.exists(uri):
        return None
    doc = json.loads(storage.read_bytes(uri))
    doc["shard_meta"] = [ShardMeta(**s) for s in doc["shard_meta"]]
    return IndexManifest(**doc)


def usable(manifest: IndexManifest | None, snapshot_id, schema_id: int, shards: int) -> bool:
    return (manifest is not None and manifest.snapshot_id == snapshot_id and manifest.schema_id == schema_id
            and manifest.shards == shards and manifest.key_hash_scheme == KEY_HASH_SCHEME)
