"""Dynamic partition overwrite (Paimon's ``dynamic-partition-overwrite``, an OVERWRITE snapshot): the
partitions the batch writes rows into are replaced by the batch; every other partition keeps its files.

The partitions replaced are those with at least one live (+I/+U) row in the commit's new files — not every
partition a message touches: in a cross-partition table a batch key that lived in another partition q is
moved as it is by an upsert (a DELETE written to q, the row written to its new partition), and q, holding only
that DELETE, must not be wiped. This keeps the primary key unique across the table, as Paimon's cross-partition
upsert does.

In a table whose writes compact level 0 (deletion vectors, ``changelog-producer=lookup``) a bucket that gets
live rows is written as Paimon's overwrite writer writes it, ignoring the bucket's previous files (nothing to
look up or mark: they all go); the OVERWRITE snapshot also drops the replaced partitions' deletion-vector index
files, and the COMPACT snapshot of the same commit then lifts the new level-0 files up, as Paimon's overwrite
commit does. No changelog is committed, as in Paimon. A bucket with only deletes keeps its lookups (its
partition is not replaced, or its message is dropped here: see without_replaced_deletes).

The global key index is not published for an OVERWRITE snapshot: keys of the replaced partitions that the
batch does not have are gone from the table, and the next bootstrap-index rebuilds the index in full from the
table (engine/runs/bootstrap_index.py rebuilds past any OVERWRITE snapshot), so it is right by construction.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_paimon.engine.commit.staging import data_file_paths
from airflow_paimon.engine.paimon_compat import overwrite_changes_provider, overwrite_hash_index_deletes, try_commit
from airflow_paimon.engine.files.scan import latest_snapshot
from airflow_paimon.engine.files.deletion_vectors import partition_index_deletes

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

WRITE_MODES = ("upsert", "overwrite")


def overwritten_partitions(messages) -> list[tuple]:
    """The partitions of ``messages`` that receive a live row (row count above delete row count)."""
    found = {tuple(m.partition) for m in messages if holds_live_rows(m)}
    return sorted(found, key=lambda p: tuple((v is None, str(v)) for v in p))


def holds_live_rows(message) -> bool:
    return any(f.row_count - (f.delete_row_count or 0) > 0 for f in message.new_files)


def without_replaced_deletes(table: FileStoreTable, messages) -> list:
    """``messages`` less those that only delete in a partition the overwrite replaces: their deletes are moot,
    and in a table whose writes compact level 0 their compaction looked up (and marked) files the OVERWRITE
    removes. Their files are never committed: deleted here (best effort; else orphans for orphan removal)."""
    replaced = set(overwritten_partitions(messages))
    moot = [tuple(m.partition) in replaced and not holds_live_rows(m) for m in messages]
    for path in data_file_paths(table, [m for m, drop in zip(messages, moot) if drop]):
        table.file_io.delete_quietly(path)
    return [m for m, drop in zip(messages, moot) if not drop]


def partition_filter(table: FileStoreTable, partitions: list[tuple]):
    """A pypaimon predicate matching exactly ``partitions`` (null values as IS NULL)."""
    from pypaimon.common.predicate_builder import PredicateBuilder

    builder = PredicateBuilder(table.partition_keys_fields)
    ors = []
    for values in partitions:
        ors.append(builder.and_predicates([builder.is_null(k) if v is None else builder.equal(k, v)
                                           for k, v in zip(table.partition_keys, values)]))
    return builder.or_predicates(ors)


def commit_overwrite(committer, table: FileStoreTable, messages, commit_identifier: int,
                     properties: dict[str, str] | None = None) -> None:
    """One OVERWRITE snapshot through ``committer`` (a FileStoreCommit, e.g. GuardedCommit): the live files of
    the overwritten partitions deleted, the files of ``messages`` added; retried on top of the latest snapshot
    by pypaimon like its own overwrite, with the conflict check on."""
    partitions = overwritten_partitions(messages)
    if not partitions:  # only deletes: nothing to replace, an ordinary commit
        committer.commit(messages, commit_identifier, properties)
        return
    where = partition_filter(table, partitions)
    try_commit(committer, commit_kind="OVERWRITE", commit_identifier=commit_identifier,
               commit_entries_plan=overwrite_changes_provider(committer, where, messages).provide,
               changelog_entries=[], detect_conflicts=True, allow_rollback=False,
               index_deletes=[*overwrite_hash_index_deletes(committer, where),
                              *partition_index_deletes(table, latest_snapshot(table), partitions)],
               index_adds=[e for m in messages for e in m.index_adds], snapshot_properties=properties,
               allow_empty_commit=True)
