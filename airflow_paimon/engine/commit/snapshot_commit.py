"""Conditional snapshot commits: a commit lands as exactly the snapshot after the one it was checked against,
or not at all.

pypaimon's FileStoreCommit retries a failed snapshot creation on top of whatever is latest then, without a
conflict check for APPEND commits; and its RenamingSnapshotCommit on a local file system checks-then-renames
under an in-process lock, so a second process can replace the first one's snapshot file. Here every attempt
first passes ``guard(latest)`` (which raises to refuse the snapshot it would build on), and on a local file
system the snapshot file is created with a hard link, which fails if the name exists in any process.

Each attempt also compacts the manifests it carries into the new base manifest list (manifest_merge.py).
"""
from __future__ import annotations

import errno
import logging
import os
import uuid

from pypaimon.common.json_util import JSON
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.snapshot.renaming_snapshot_commit import RenamingSnapshotCommit
from pypaimon.snapshot.snapshot_commit import SnapshotCommit
from pypaimon.write.file_store_commit import FileStoreCommit

from airflow_paimon.engine.commit.manifest_merge import ManifestMergeOptions, ManifestMerger, MergingManifestList

log = logging.getLogger(__name__)


class ExclusiveSnapshotCommit(SnapshotCommit):
    """Creates ``snapshot-N`` only if no process has: write a temporary file, hard-link it to the name."""

    def __init__(self, snapshot_manager):
        self.snapshot_manager = snapshot_manager
        self.file_io = snapshot_manager.file_io

    def commit(self, base_snapshot_uuid, snapshot, statistics) -> bool:
        target = self.file_io._to_file(self.snapshot_manager.get_snapshot_path(snapshot.id))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(JSON.to_json(snapshot, indent=2), encoding="utf-8")
        try:
            os.link(tmp, target)
        except OSError as e:
            if e.errno != errno.EEXIST:
                raise
            return False
        finally:
            tmp.unlink(missing_ok=True)
        RenamingSnapshotCommit(self.snapshot_manager)._commit_latest_hint(snapshot.id)  # a hint only
        return True

    def close(self):
        pass


def exclusive_snapshot_commit(table) -> SnapshotCommit:
    """The table's snapshot commit, made exclusive across processes where pypaimon's is not."""
    inner = table.new_snapshot_commit()
    if isinstance(inner, RenamingSnapshotCommit) and isinstance(table.file_io, LocalFileIO):
        return ExclusiveSnapshotCommit(table.snapshot_manager())
    return inner  # a catalog's commit (REST) is a server-side compare-and-swap on the base snapshot


class GuardedCommit(FileStoreCommit):
    """FileStoreCommit whose every attempt (the first and each retry) calls ``guard(latest snapshot)`` before
    building the snapshot ``latest + 1``; the guard raises to refuse. Together with an exclusive snapshot
    commit the snapshot lands exactly on the latest snapshot the guard accepted.

    Its base manifest list is compacted (Paimon's manifest.merge-min-count / full-compaction threshold)."""

    def __init__(self, table, commit_user: str, guard):
        super().__init__(exclusive_snapshot_commit(table), table, commit_user)
        self._guard = guard
        self._merge_options = ManifestMergeOptions.of(table)

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
