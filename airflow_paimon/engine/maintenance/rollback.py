"""Roll a table back to a snapshot or a tag, as Paimon's RollbackHelper does, plus the provider's own state.

Order, so that a crash part way leaves a state a re-run finishes and a reader never sees a gap:

1. The global key index of every later snapshot is deleted (``{index_root}/{db.table}/snapshot-N``, N > target).
   The next commit reuses the id N; an index of the old snapshot N would be taken for the new one (the index of
   a snapshot is published once and kept: engine/index/layout.py ``publish_manifest``), assigning keys to
   buckets that no longer hold them. Without it the next bootstrap reuses or catches up from the target's
   index, or rebuilds. The commit records of later snapshots go too (engine/commit/record.py): once a commit
   reusing the id N expired, the record of the old snapshot N would be taken for a commit still in the table.
2. The target's snapshot file is written back from the tag when expiry had removed it.
3. ``snapshot/LATEST`` names the target.
4. Later snapshot files are deleted newest first (the snapshots left are always a contiguous run, so a reader
   sees an older state, never a hole), then the tags of later snapshots, as in Paimon.
5. ``snapshot/EARLIEST`` is moved down to the target when it had been expired.

Data and manifest files only the removed snapshots used stay behind as orphans: PaimonRemoveOrphanFilesOperator
deletes them once older than its margin (Paimon deletes them at once; this keeps the rollback cheap and safe
against a reader still planning the old snapshot). Snapshots are not locked: pause the table's writers.
"""
from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.commit.record import drop_records_after
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.files.layout import index_dir, indexed_snapshot
from airflow_paimon.engine.table.table import get_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

_SNAPSHOT = re.compile(r"^snapshot-(\d+)$")


def numbered(names: list[str]) -> list[int]:
    """The N of every ``snapshot-N`` (Paimon's snapshot files) among ``names``, newest first."""
    return sorted((int(m.group(1)) for m in map(_SNAPSHOT.match, names) if m), reverse=True)


def drop_later_indexes(index_root: str, identifier: str, target_id: int) -> list[int]:
    """Delete the index directories of snapshots after ``target_id`` (confined to the table's index)."""
    table_index = index_dir(index_root, identifier)
    later = sorted(((n, name) for name in storage.list_dir(table_index)
                    if (n := indexed_snapshot(name)) is not None and n > target_id), reverse=True)
    for _, name in later:
        storage.delete_dir_within(table_index, storage.join(table_index, name))
    return [n for n, _ in later]


def target_snapshot(table: FileStoreTable, identifier: str, to_snapshot: int | None, to_tag: str | None):
    """The snapshot to roll back to: by id (its file, else a tag of that id), or a tag's."""
    if (to_snapshot is None) == (to_tag is None):
        raise ValidationError(identifier, "give exactly one of to_snapshot and to_tag")
    tags = table.tag_manager()
    if to_tag is not None:
        tag = tags.get(to_tag)
        if tag is None:
            raise ValidationError(identifier, "no such tag to roll back to", value=to_tag)
        return tag.trim_to_snapshot()
    snapshot = table.snapshot_manager().get_snapshot_by_id(to_snapshot)
    if snapshot is not None:
        return snapshot
    for name in tags.list_tags():
        tag = tags.get(name)
        if tag is not None and tag.id == to_snapshot:
            return tag.trim_to_snapshot()
    raise ValidationError(identifier, "no such snapshot to roll back to (never committed, expired untagged, or "
                                      "rolled back)", value=to_snapshot)


def check_not_split(table: FileStoreTable, identifier: str, target) -> None:
    """Refuse a target that splits one commit: a deletion-vector (or ``changelog-producer=lookup``) write lands
    as an APPEND of level-0 files and a COMPACT of the same commit identity right after it. Rolled back to the
    APPEND, the table would read as before the write (readers skip level 0) while the write's files stay live,
    so the next full compaction would bring back rows the rollback meant to remove."""
    after = table.snapshot_manager().get_snapshot_by_id(target.id + 1)
    if after is not None and (after.commit_user, after.commit_identifier) == (target.commit_user,
                                                                          target.commit_identifier):
        raise ValidationError(identifier, f"snapshot {target.id} is the first half of one commit of "
                                          f"{target.commit_user} whose second half ({after.commit_kind}) is snapshot "
                                          f"{after.id}; roll back to snapshot {after.id} to keep that write, or to "
                                          f"snapshot {target.id - 1} to remove it", value=target.id)


def rollback(catalog_options: dict, identifier: str, index_root: str, to_snapshot: int | None = None,
             to_tag: str | None = None) -> dict:
    """Make the table read as it did at the target snapshot. Idempotent: a re-run finds nothing later to delete.
    Returns ``{"table", "snapshot_id", "deleted_snapshots", "deleted_tags", "deleted_index_snapshots"}``."""
    from pypaimon.common.json_util import JSON

    table = get_table(catalog_options, identifier)
    target = target_snapshot(table, identifier, to_snapshot, to_tag)
    check_not_split(table, identifier, target)
    snapshots, tags, file_io = table.snapshot_manager(), table.tag_manager(), table.file_io
    deleted_index = drop_later_indexes(index_root, identifier, target.id)
    deleted_records = drop_records_after(table, target.id)
    target_path = snapshots.get_snapshot_path(target.id)
    if not file_io.exists(target_path):  # expired, kept by its tag
        file_io.write_file(target_path, JSON.to_json(target), overwrite=False)
    file_io.overwrite_file_utf8(snapshots.latest_file, str(target.id))
    later = [n for n in numbered([s.path.rstrip("/").rsplit("/", 1)[-1]
                                  for s in file_io.list_status(snapshots.snapshot_dir)]) if n > target.id]
    for n in later:
        file_io.delete(snapshots.get_snapshot_path(n))
    deleted_tags = []
    for name in sorted(tags.list_tags()):
        tag = tags.get(name)
        if tag is not None and tag.id > target.id:
            tags.delete_tag(name)
            deleted_tags.append(name)
    earliest = f"{snapshots.snapshot_dir}/EARLIEST"
    if file_io.exists(earliest) and int(file_io.read_file_utf8(earliest).strip()) > target.id:
        file_io.overwrite_file_utf8(earliest, str(target.id))
    if later or deleted_index or deleted_tags or deleted_records:
        log.info("rolled %s back to snapshot %s: deleted snapshots %s, tags %s, index of snapshots %s, commit "
                 "records of snapshots %s", identifier, target.id, later, deleted_tags, deleted_index, deleted_records)
    return {"table": identifier, "snapshot_id": target.id, "deleted_snapshots": sorted(later),
            "deleted_tags": deleted_tags, "deleted_index_snapshots": sorted(deleted_index)}
