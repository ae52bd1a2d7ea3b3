"""Where a table's index lives, and its manifest: one directory per indexed snapshot.

    {index_root}/{database}.{table}/snapshot-{S}/manifest.json
                                    snapshot-{S}/shard-00003-*.sst   (files this snapshot added)

A shard is a list of SST files applied in order — a base file, then deltas — which may live in the
directories of earlier snapshots; the manifest names them relative to the table's index directory, with
size and checksum. The manifest is written last and atomically, so an index without one is never read.
The names themselves are engine/files/layout.py's.
"""
from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import TypeGuard

import pyarrow.fs as pafs

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.index.sharding import KEY_HASH_SCHEME

log = logging.getLogger(__name__)

MAX_SHARD_FILES = 8  # past this many deltas a shard is rewritten as one file


@dataclass
class IndexFile:
    path: str  # relative to the table's index directory
    size: int
    checksum: str  # sha256
    entries: int
    mtime_ns: int | None = None  # the file's modification time when published (None: an older manifest)


@dataclass
class ShardMeta:
    shard: int
    files: list[IndexFile] = field(default_factory=list)
    keys: int = 0
    bucket_counts: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class IndexManifest:
    table: str
    snapshot_id: int | None
    schema_id: int
    shards: int
    key_hash_scheme: str
    shard_meta: list[ShardMeta]
    origin: str = "rebuilt"  # rebuilt | caught_up | reused | committed
    # the keys it indexes (key_signature); None: a manifest from before schema evolution, see its schema_id
    key_signature: str | None = None
    # which snapshot ``snapshot_id`` it indexes (engine/snapshot/history.py): after a rollback the id names another one;
    # None: a manifest from before fingerprints
    snapshot_fingerprint: str | None = None

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.shard_meta)

    def shard(self, i: int) -> ShardMeta:
        return self.shard_meta[i]

    def files(self) -> list[IndexFile]:
        return [f for s in self.shard_meta for f in s.files]

    def shares_buckets(self) -> bool:
        """Whether some bucket holds keys of a shard that does not own it (bucket % shards != shard): a table
        another writer filled (Java or Flink Paimon, pypaimon-rust) or written under another shard count. Such a
        bucket gets rows from several assign tasks."""
        return any(int(bucket) % self.shards != meta.shard
                   for meta in self.shard_meta for counts in meta.bucket_counts.values()
                   for bucket, n in counts.items() if n > 0)


def manifest_to_json(manifest: IndexManifest) -> str:
    return json.dumps(asdict(manifest), sort_keys=True)


def shard_meta_from_dict(d: dict) -> ShardMeta:
    return ShardMeta(d["shard"], [IndexFile(**f) for f in d["files"]], d["keys"], d["bucket_counts"])


def shard_meta_json(meta: ShardMeta) -> str:
    return json.dumps(asdict(meta))


def merge_shard_parts(shards: int, parts: list[ShardMeta]) -> list[ShardMeta]:
    """Every shard from the parts rebuild tasks wrote of it (disjoint keys): files in order, keys and
    bucket counts summed; a shard no task wrote is empty."""
    merged = [ShardMeta(i) for i in range(shards)]
    for part in parts:
        meta = merged[part.shard]
        meta.files.extend(part.files)
        meta.keys += part.keys
        for partition, counts in part.bucket_counts.items():
            into = meta.bucket_counts.setdefault(partition, {})
            for bucket, n in counts.items():
                into[bucket] = into.get(bucket, 0) + n
    return merged


def manifest_from_json(text: str) -> IndexManifest:
    doc = json.loads(text)
    doc["shard_meta"] = [shard_meta_from_dict(s) for s in doc["shard_meta"]]
    return IndexManifest(**doc)


def write_manifest(index_uri: str, manifest: IndexManifest) -> None:
    uri = layout.index_manifest(index_uri, manifest.snapshot_id)
    storage.write_bytes_atomic(uri, manifest_to_json(manifest).encode())


def publish_manifest(index_uri: str, manifest: IndexManifest) -> IndexManifest:
    """Publish ``manifest`` as the index of its snapshot unless an intact, compatible one is in place already;
    returns the index in place. Two publishers of one snapshot (a run's commit, another run's bootstrap catching
    up on it) race: the first manifest stays, so the files it names are the ones every clean-up keeps — the loser
    never replaces it with one naming files a clean-up may have judged unreferenced. A corrupt or incompatible
    manifest (other shard count, schema or hash scheme) is replaced."""
    uri = layout.index_manifest(index_uri, manifest.snapshot_id)
    if storage.write_bytes_if_absent(uri, manifest_to_json(manifest).encode()):
        return manifest
    existing = read_manifest(index_uri, manifest.snapshot_id)
    if (compatible(existing, manifest.shards) and _same_keys(existing, manifest)
            and existing.snapshot_fingerprint == manifest.snapshot_fingerprint  # not of a rolled-back snapshot
            and verify(index_uri, existing) is None):
        return existing
    write_manifest(index_uri, manifest)
    return manifest


def read_manifest(index_uri: str, snapshot_id: int | None) -> IndexManifest | None:
    uri = layout.index_manifest(index_uri, snapshot_id)
    if not storage.exists(uri):
        return None
    try:
        return manifest_from_json(storage.read_bytes(uri).decode())
    except (ValueError, KeyError, TypeError) as e:  # unreadable: as if absent, so the bootstrap rebuilds
        log.warning("index manifest %s is corrupt, ignoring it: %s: %s", uri, type(e).__name__, str(e)[:200])
        return None


def base_manifest(index_uri: str, snapshot_id: int | None) -> IndexManifest:
    """The index a write runs against, which its bootstrap-index published for ``snapshot_id``."""
    manifest = read_manifest(index_uri, snapshot_id)
    if manifest is None:  # removed or corrupt since: only a run from bootstrap-index builds it again
        raise StaleIndexError(f"no readable index of snapshot {snapshot_id} at {index_uri}")
    return manifest


def published_snapshots(index_uri: str) -> list[int]:
    """Snapshot ids with a published index, ascending."""
    ids = []
    for name in storage.list_dir(index_uri):
        snapshot_id = layout.indexed_snapshot(name)
        if snapshot_id is not None and storage.exists(storage.join(index_uri, name, layout.INDEX_MANIFEST)):
            ids.append(snapshot_id)
    return sorted(ids)


def newest_published(index_uri: str, at_most: int | None) -> IndexManifest | None:
    """The published index of the newest snapshot not after ``at_most``."""
    candidates = [s for s in published_snapshots(index_uri) if s <= (at_most or 0)]
    return read_manifest(index_uri, candidates[-1]) if candidates else None


def compatible(manifest: IndexManifest | None, shards: int) -> TypeGuard[IndexManifest]:
    """Whether an index has the shard count and key hash asked for. Its keys are compared by key_signature,
    not schema id: a column added or widened changes neither the keys nor their encoding."""
    return manifest is not None and manifest.shards == shards and manifest.key_hash_scheme == KEY_HASH_SCHEME


def key_signature(schema) -> str:
    """What a global index depends on in a Paimon table schema: the primary and partition keys and their
    types. Schemas with one signature index the same keys the same way."""
    types = {f.name: str(f.type).replace(" NOT NULL", "").strip() for f in schema.fields}
    return ("primary-keys: " + ", ".join(f"{k} {types.get(k)}" for k in schema.primary_keys)
            + "; partition-keys: " + ", ".join(f"{k} {types.get(k)}" for k in schema.partition_keys))


def _same_keys(a: IndexManifest, b: IndexManifest) -> bool:
    if a.key_signature is not None and b.key_signature is not None:
        return a.key_signature == b.key_signature
    return a.schema_id == b.schema_id


def describe_file(index_uri: str, relative: str, entries: int) -> IndexFile:
    uri = storage.join(index_uri, relative)
    info = storage.file_info(uri)
    return IndexFile(relative, info.size, storage.sha256(uri), entries, info.mtime_ns)


def verify(index_uri: str, manifest: IndexManifest) -> str | None:
    """None if every file of the index is there with its size and checksum; else what is wrong.

    A file whose size and modification time are still those recorded when it was published has not been
    written since: its checksum is not read again. Hashing every file on every bootstrap cost O(index) — at
    20M keys 209 MB and 0.3 s per warm bootstrap, and on an object store a download of the whole index."""
    for f in manifest.files():
        uri = storage.join(index_uri, f.path)
        info = storage.file_info(uri)
        if info.type != pafs.FileType.File:
            return f"index file {f.path} is missing"
        rewritten = f.mtime_ns is None or info.mtime_ns != f.mtime_ns
        if info.size != f.size or (rewritten and storage.sha256(uri) != f.checksum):
            return f"index file {f.path} is corrupt (size or checksum mismatch)"
    return None
