"""Manifest compaction, as Paimon's ManifestFileMerger does it in every commit: the manifests of the latest
snapshot (base + delta) are merged before they become the new snapshot's base manifest list, so the list and
the planning that reads it stay bounded however many snapshots a table lives through.

- Full compaction (first tried): when the manifests that must change (holding DELETE entries, or smaller than
  ``manifest.target-file-size``) add up to ``manifest.full-compaction-threshold-size``, every such manifest,
  and every other one that may hold a deleted file, is rewritten without DELETE entries and without the files
  they delete.
- Minor compaction: runs of manifests are merged once they reach the target size, and the last run once it
  has ``manifest.merge-min-count`` manifests; order kept, an ADD and a later DELETE of one file cancel.

Only new manifest files are written: the replaced ones stay, older snapshots still list them; snapshot expiry
deletes them once no retained snapshot does. pypaimon's FileStoreCommit never merges (it copies base + delta
into the new base list), so GuardedCommit (snapshot_commit.py) gives it a manifest list that merges here.
"""
from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.manifest.schema.file_entry import FileEntry

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.options import ManifestMergeOptions, TableOptions
from airflow_paimon.engine.faults import crash_point

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

class ManifestMerger:
    """Merges one commit attempt's manifests; remembers the manifest files it wrote so that an attempt that
    does not become a snapshot can delete them (nothing else references them)."""

    def __init__(self, table: FileStoreTable, options: ManifestMergeOptions | None = None):
        self.table = table
        self.options = options or TableOptions.of(table).manifest
        self.files = ManifestFileManager(table)
        self.written: list = []
        self._entries: dict[str, list] = {}

    def merge(self, manifests: list) -> list:
        """The manifests to list in the new base manifest list (Paimon's ManifestFileMerger.merge)."""
        try:
            merged = self._full_compaction(manifests)
            return merged if merged is not None else self._minor_compaction(manifests)
        except Exception:
            self.abort()
            raise

    def abort(self) -> None:
        """Delete the manifests this merger wrote: only for an attempt that made no snapshot."""
        for meta in self.written:
            self.table.file_io.delete_quietly(f"{self.files.manifest_path}/{meta.file_name}")
        self.written = []

    def _read(self, meta) -> list:
        if meta.file_name not in self._entries:  # stats kept: the merged manifests carry them on
            self._entries[meta.file_name] = self.files.read(meta.file_name, drop_stats=False,
                                                            file_size=meta.file_size)
        return self._entries[meta.file_name]

    def _write(self, entries: list) -> list:
        metas = self.files.rolling_write(entries, self.options.target_size, f"manifest-{uuid.uuid4()}")
        self.written += metas
        return metas

    def _minor_compaction(self, manifests: list) -> list:
        result, candidates, size = [], [], 0
        for meta in manifests:
            candidates.append(meta)
            size += meta.file_size
            if size >= self.options.target_size:
                result += self._merge_candidates(candidates)
                candidates, size = [], 0
        if len(candidates) >= self.options.min_count:
            result += self._merge_candidates(candidates)
        else:
            result += candidates
        return result

    def _merge_candidates(self, candidates: list) -> list:
        if len(candidates) == 1:
            return candidates
        entries = FileEntry.merge_entries(e for meta in candidates for e in self._read(meta))
        return self._write(entries) if entries else []

    def _must_change(self, meta) -> bool:
        return meta.num_deleted_files > 0 or meta.file_size < self.options.target_size

    def _full_compaction(self, manifests: list) -> list | None:
        delta_size = sum(m.file_size for m in manifests if self._must_change(m))
        if delta_size < self.options.full_compaction_size:
            return None
        deleted = {e.identifier() for m in manifests if m.num_deleted_files > 0
                   for e in self._read(m) if e.kind == FileKind.DELETE}
        partitions = {i.partition for i in deleted}
        result: list = []
        to_merge: list = []
        for meta in manifests:  # a manifest that need not change and holds no deleted file's partition stays
            keep = not self._must_change(meta) and not (partitions and may_hold(meta, partitions))
            (result if keep else to_merge).append(meta)
        if len(to_merge) <= 1:
            return None
        entries = []
        for meta in to_merge:
            live = [e for e in self._read(meta) if e.kind != FileKind.DELETE and e.identifier() not in deleted]
            if self._must_change(meta) or len(live) < len(self._read(meta)):
                entries += live
            else:
                result.append(meta)
        log.info("%s: manifest full compaction of %s manifests (%s bytes to change, %s deleted files dropped)",
                 self.table.identifier.get_full_name(), len(to_merge), delta_size, len(deleted))
        return result + (self._write(entries) if entries else [])


def may_hold(meta, partitions: set) -> bool:
    """Whether a manifest's partition statistics admit any of ``partitions`` (a GenericRow each)."""
    stats = meta.partition_stats
    for partition in partitions:
        values = partition.values
        if all(_within(stats, i, v) for i, v in enumerate(values)):
            return True
    return False


def _within(stats, i: int, value) -> bool:
    try:
        if value is None:
            return stats.null_counts is None or stats.null_counts[i] > 0
        low, high = stats.min_values.get_field(i), stats.max_values.get_field(i)
        return low is None or high is None or low <= value <= high
    except (IndexError, TypeError):  # statistics unreadable or incomparable: assume it may
        return True


class MergingManifestList(ManifestListManager):
    """pypaimon's manifest list manager whose ``read_all`` (called by FileStoreCommit to build the new base
    manifest list from the latest snapshot) returns the merged manifests."""

    def __init__(self, table: FileStoreTable, merger: ManifestMerger):
        super().__init__(table)
        self.merger = merger

    def read_all(self, snapshot) -> list:
        manifests = super().read_all(snapshot)
        merged = self.merger.merge(manifests)
        if self.merger.written:
            log.info("%s: %s manifests merged into %s", self.table.identifier.get_full_name(), len(manifests),
                     len(merged))
            crash_point("commit.manifests_merged")
        return merged
