"""Conditional snapshot commits: a commit lands as exactly the snapshot after the one it was checked against,
or not at all.

pypaimon's FileStoreCommit retries a failed snapshot creation on top of whatever is latest then, without a
conflict check for APPEND commits; and its RenamingSnapshotCommit checks-then-renames (under an in-process lock
on a local file system; on an object store a rename is a copy that replaces the target), so a second process
can replace the first one's snapshot file and both are told they committed. Here every attempt first passes
``guard(latest)`` (which raises to refuse the snapshot it would build on), and the snapshot file is created only
if absent, in any process (storage.write_bytes_if_absent: a hard link on a local file system, a conditional
PUT on S3); a warehouse where that cannot be done is refused before the commit builds anything.

Each attempt also compacts the manifests it carries into the new base manifest list (manifest_merge.py).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pypaimon.common.json_util import JSON
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit
from pypaimon.snapshot.snapshot_commit import SnapshotCommit
from pypaimon.write.file_store_commit import FileStoreCommit

from airflow_paimon.engine import paimon_compat
from airflow_paimon.engine.files import storage
from airflow_paimon.engine.commit.manifest_merge import ManifestMerger, MergingManifestList
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.errors import ValidationError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)


class ExclusiveSnapshotCommit(SnapshotCommit):
    """Creates ``snapshot-N`` only if no process has (storage.write_bytes_if_absent)."""

    def __init__(self, snapshot_manager):
        self.snapshot_manager = snapshot_manager
        self.file_io = snapshot_manager.file_io

    def commit(self, base_snapshot_uuid, snapshot, statistics) -> bool:
        path = snapshot_path(self.snapshot_manager, snapshot.id)
        if not storage.write_bytes_if_absent(path, JSON.to_json(snapshot, indent=2).encode("utf-8")):
            return False
        paimon_compat.commit_latest_hint(self.snapshot_manager, snapshot.id)  # a hint only
        return True

    def close(self):
        pass


def snapshot_path(snapshot_manager, snapshot_id: int) -> str:
    path = snapshot_manager.get_snapshot_path(snapshot_id)
    if isinstance(snapshot_manager.file_io, LocalFileIO):  # file:// URIs and FUSE mounts: the local path
        return str(paimon_compat.local_file(snapshot_manager.file_io, path))
    return path


def exclusive_snapshot_commit(table: FileStoreTable) -> SnapshotCommit:
    """The table's snapshot commit, made exclusive across processes where pypaimon's is not; a warehouse whose
    snapshot files cannot be created exclusively is refused (a commit there could not know that it won)."""
    inner = table.new_snapshot_commit()
    if not isinstance(inner, RenamingSnapshotCommit):
        return inner  # a catalog's commit (REST) is a server-side compare-and-swap on the base snapshot
    manager = table.snapshot_manager()
    path = snapshot_path(manager, 1)
    if not storage.creates_exclusively(path):
        raise ValidationError(
            table.identifier.get_full_name(),
            f"snapshot files under {path.rsplit('/', 2)[0]} cannot be created exclusively ({path.split(':', 1)[0]}:// "
            f"has no create-if-absent; local paths, file:// and {'/'.join(storage.S3_SCHEMES)}:// do), so a commit "
            "could not tell whether another writer's snapshot replaced its own; nothing committed")
    return ExclusiveSnapshotCommit(manager)


class GuardedCommit(FileStoreCommit):
    """FileStoreCommit whose every attempt (the first and each retry) calls ``guard(latest snapshot)`` before
    building the snapshot ``latest + 1``; the guard raises to refuse. Together with an exclusive snapshot
    commit the snapshot lands exactly on the latest snapshot the guard accepted.

    Its base manifest list is compacted (Paimon's manifest.merge-min-count / full-compaction threshold)."""

    manifest_list_manager: Any  # pypaimon's ManifestListManager; swapped for a merging one per attempt


    def __init__(self, table: FileStoreTable, commit_user: str, guard):
        super().__init__(exclusive_snapshot_commit(table), table, commit_user)
        self._guard = guard
        self._merge_options = TableOptions.of(table).manifest

    def _try_commit(self, *args, commit_entries_plan, **kwargs):
        def plan(latest):
            self._guard(latest)
            return commit_entries_plan(latest)

        return super()._try_commit(*args, commit_entries_plan=plan, **kwargs)

    def _try_commit_once(self, *args, **kwargs):
        # pypaimon builds the new base manifest list from manifest_list_manager.read_all(latest): for this
        # attempt that read merges (conflict detection and the retry scans hold their own manager)
        merger = ManifestMerger(self.table, self._merge_options)
        plain, self.manifest_list_manager = self.manifest_list_manager, MergingManifestList(self.table, merger)
        try:
            result = super()._try_commit_once(*args, **kwargs)
        except Exception:
            merger.abort()  # failed before its snapshot was created: the merged manifests are nobody's
            raise
        finally:
            self.manifest_list_manager = plain
        if not result.is_success() and not getattr(result, "commit_result_may_be_uncertain", False):
            merger.abort()  # another snapshot took the id: retried on top of it, merged again
        return result
