"""Moving shards between storage and a task's local RocksDB: load a shard, export what a task changed,
publish shard files and manifests for a snapshot, and clean up what no index needs any more."""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import replace
from typing import Any

import pyarrow.fs as pafs

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.index.layout import (MAX_SHARD_FILES, IndexFile, IndexManifest, ShardMeta, describe_file,
                                                published_snapshots, read_manifest, publish_manifest)
from airflow_paimon.engine.index.shard import IndexOptions, ShardIndex

log = logging.getLogger(__name__)

# The type of a shard file: how it applies to the shard's earlier files (a rebuild's parts are "base-<part>")
DELTA, FULL = "delta", "full"


def load_shard(index_uri: str, meta: ShardMeta, workdir: str, options: IndexOptions) -> ShardIndex:
    """A local RocksDB holding the shard: its files downloaded and ingested in order."""
    index = ShardIndex(workdir, options, mapped=bool(meta.files))  # maps only files its lookups will read
    local = []
    for i, f in enumerate(meta.files):
        path = os.path.join(workdir, f"in-{meta.shard:05d}-{i}.sst")
        _fetch(storage.join(index_uri, f.path), path)
        local.append(path)
    index.ingest(local, move=True)  # the downloaded copies are the task's own: no second copy
    return index


def _fetch(uri: str, path: str) -> None:
    """A published file as a local file to hand over to RocksDB: a hard link when the warehouse is on this
    machine's filesystem, else a download. A link costs no copy and leaves RocksDB's ingestion nothing new
    to fsync, nor the clean-up blocks to free (an 11.5 MB shard: 0.131 -> 0.117 s per assign task). RocksDB
    never writes into an ingested file (tested); it reopens it for writing to sync it, hence W_OK."""
    fs, source = storage.filesystem(uri)
    if isinstance(fs, pafs.LocalFileSystem) and os.access(source, os.W_OK):
        try:
            os.link(source, path)
            return
        except OSError:  # another filesystem, or links not allowed
            pass
    storage.download(uri, path)


def export_changes(index: ShardIndex, base: ShardMeta, workdir: str) -> tuple[str | None, str, int]:
    """Write what ``index`` changed as a delta SST, or the whole shard when it has too many files already or
    changed too many keys to hold their changes (ShardIndex.exports_in_full: a first load).

    Returns (local path or None when nothing changed, DELTA | FULL, entries written).
    """
    if index.changed == 0:
        return None, DELTA, 0
    file_type = FULL if len(base.files) + 1 > MAX_SHARD_FILES or index.exports_in_full else DELTA
    path = os.path.join(workdir, f"out-{base.shard:05d}-{file_type}.sst")
    entries = index.export_full(path) if file_type == FULL else index.export_delta(path)
    return (path if entries else None), file_type, entries


def publish_file(index_uri: str, snapshot_id: int | None, shard: int, file_type: str, source: str,
                 entries: int, writer: str | None = None) -> IndexFile:
    """Copy a shard file (a local path or a staged URI) into the snapshot's directory; describe it. A
    ``writer`` in the name keeps the files of two publishers of one snapshot apart."""
    relative = layout.index_file(layout.index_snapshot_dir(snapshot_id),
                                 layout.shard_file_name(shard, file_type, writer))
    target = storage.join(index_uri, relative)
    if "://" in source or not os.path.exists(source):
        storage.write_bytes_atomic(target, storage.read_bytes(source))
    else:
        storage.upload(source, target)
    return describe_file(index_uri, relative, entries)


def advance(meta: ShardMeta, new_file: IndexFile | None, file_type: str, keys: int, bucket_counts: dict) -> ShardMeta:
    """The shard after a delta (appended to its files) or a full rewrite (replacing them)."""
    files = list(meta.files)
    if new_file is not None:
        files = [new_file] if file_type == FULL else files + [new_file]
    return replace(meta, files=files, keys=keys, bucket_counts=bucket_counts)


def stage_shard(staging_uri: str, shard: int, local_path: str | None, file_type: str, entries: int, keys: int,
                bucket_counts: dict, counters: dict | None = None) -> None:
    """Hand a shard's changes over to the commit task (which publishes them once its snapshot exists)."""
    doc: dict[str, Any] = {"shard": shard, "file_type": file_type, "entries": entries, "keys": keys,
                           "bucket_counts": bucket_counts, "file": None, "counters": counters or {}}
    if local_path is not None:
        doc["file"] = layout.staged_shard_file(staging_uri, shard, file_type)
        storage.upload(local_path, doc["file"])
    storage.write_bytes_atomic(layout.staged_shard_meta(staging_uri, shard), json.dumps(doc).encode())


def staged_shards(staging_uri: str) -> dict[int, dict]:
    out = {}
    staged_index = layout.staged_index_dir(staging_uri)
    for name in storage.list_dir(staged_index):
        if layout.is_staged_shard_meta(name):
            doc = json.loads(storage.read_bytes(storage.join(staged_index, name)))
            out[doc["shard"]] = doc
    return out


def publish_committed(index_uri: str, base: IndexManifest, staged: dict[int, dict], snapshot_id: int,
                      writer: str | None = None, snapshot_fingerprint: str | None = None) -> IndexManifest:
    """The index of ``snapshot_id``: ``base`` advanced by the staged shard changes of the run that made it
    (``writer``, its commit user, names the files). If the snapshot's index got published meanwhile (a
    bootstrap's catch-up, a concurrent retry), that one stays and is returned."""
    metas = []
    for meta in base.shard_meta:
        doc = staged.get(meta.shard)
        if doc is None:
            metas.append(meta)
            continue
        file_type = doc.get("file_type") or doc["kind"]  # "kind": staged by a version before the rename
        new_file = (publish_file(index_uri, snapshot_id, meta.shard, file_type, doc["file"], doc["entries"], writer)
                    if doc["file"] else None)
        metas.append(advance(meta, new_file, file_type, doc["keys"], doc["bucket_counts"]))
    manifest = replace(base, snapshot_id=snapshot_id, shard_meta=metas, origin="committed",
                       snapshot_fingerprint=snapshot_fingerprint)
    return publish_manifest(index_uri, manifest)


# How long a published index stays after newer ones: a run bootstrapped at it writes against it until its commit (a
# backfill's concurrent runs, two DAGs on one table), as Paimon keeps snapshots for snapshot.time-retained (1 h)
KEEP_SECONDS = 3600


def clean_up(index_uri: str, keep: int = 2, keep_seconds: float = KEEP_SECONDS) -> list[str]:
    """Delete index directories no longer needed: all but the newest ``keep`` manifests, those published less than
    ``keep_seconds`` ago (runs racing on the table still write against them) and the files they reference; never a
    directory of a newer snapshot (an index being published, its manifest not out yet). Deletes only inside
    ``index_uri``. Returns what was deleted."""
    published = published_snapshots(index_uri)
    recent = time.time() - keep_seconds
    in_use = [s for s in published[:-keep] if storage.mtime(layout.index_manifest(index_uri, s)) > recent]
    # a corrupt manifest reads as None: its directory is garbage unless a readable index uses its files
    kept = [m for m in (read_manifest(index_uri, s) for s in [*in_use, *published[-keep:]]) if m is not None]
    kept_dirs = {layout.index_snapshot_dir(m.snapshot_id) for m in kept}
    needed_dirs = kept_dirs | {layout.index_file_dir(f.path) for m in kept for f in m.files()}
    needed_files = {f.path for m in kept for f in m.files()}
    newest = published[-1] if published else -1
    deleted = []
    for name in storage.list_dir(index_uri):
        snapshot_id = layout.indexed_snapshot(name)
        if snapshot_id is None or snapshot_id > newest:
            continue
        uri = storage.join(index_uri, name)
        if name not in needed_dirs:
            storage.delete_dir_within(index_uri, uri)
            deleted.append(name)
            continue
        for f in storage.list_dir(uri):
            rel = layout.index_file(name, f)
            # a directory kept only for files a newer index still uses loses its own (stale) manifest
            if ((layout.is_shard_file(f) and rel not in needed_files)
                    or (f == layout.INDEX_MANIFEST and name not in kept_dirs)):
                storage.delete_file_within(index_uri, storage.join(uri, f))
                deleted.append(rel)
    return deleted
