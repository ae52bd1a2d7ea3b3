"""A commit on top of snapshots that landed after the run's base, when they cannot conflict with it (a rebase).

Paimon lets concurrent writers of one table both land unless their changes conflict; so does this commit, for a
plain write (no partition overwrite, no deletion vectors, not ``changelog-producer=lookup``: those rewrite or
mark files the base had) when every snapshot in between is an APPEND or a COMPACT and:
- no primary key this run writes was written by those APPENDs: each key's rows are then the same whichever
  commit went first, and every retraction this run wrote still names the place its key had;
- in a dynamic-bucket table, no partition was written by both: the bucket of a new key there was chosen from
  that partition's bucket index at the base, which this run's index files replace.
The global key index of the rebased snapshot is not published (it holds this run's changes only): the next
bootstrap catches up from the newest index, as after any other writer (engine/index/bootstrap.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.codec.keys import encode_keys, encode_partition_values
from airflow_paimon.engine.files.data_files import read_key_rows
from airflow_paimon.engine.files.scan import added_entries, data_file_path

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

APPEND, COMPACT = "APPEND", "COMPACT"
EXAMPLES = 3  # keys a refusal names


def rebase_conflict(table: FileStoreTable, landed: list, messages: list) -> str | None:
    """Why ``messages`` (this run's APPEND) cannot be committed on top of the snapshots ``landed`` since its base
    (None: they can)."""
    other = next((s for s in landed if s.commit_kind not in (APPEND, COMPACT)), None)
    if other is not None:
        return f"snapshot {other.id} is an {other.commit_kind}"
    if any(m.deleted_files or m.compact_before for m in messages):
        return "this write replaces files of its base"
    theirs = [e for s in landed if s.commit_kind == APPEND for e in added_entries(table, s)]
    if not theirs:
        return None
    types = _partition_types(table)
    indexed = {_partition(m.partition, types) for m in messages if m.index_adds or m.index_deletes}
    shared = indexed & {_partition(tuple(e.partition.values), types) for e in theirs}
    if shared:
        return f"{len(shared)} partition(s) of its bucket index written by both"
    keys = list(table.primary_keys)
    if not keys:  # an append table: rows, no keys
        return None
    ours = _keys(table, keys, [(m.partition, m.bucket, f) for m in messages for f in m.new_files])
    common = ours.filter(pc.is_in(ours, value_set=_keys(table, keys, [(tuple(e.partition.values), e.bucket, e.file)
                                                           for e in theirs])))
    if len(common):
        return f"{len(common)} key(s) written by both, e.g. {common[:EXAMPLES].to_pylist()}"
    return None


def _keys(table: FileStoreTable, keys: list[str], files: list[tuple]) -> pa.Array:
    """The encoded primary keys of the rows of ``files`` ((partition, bucket, DataFileMeta)), distinct."""
    parts = [encode_keys(read_key_rows(data_file_path(table, p, b, f), keys), keys) for p, b, f in files]
    return pa.concat_arrays(parts).unique() if parts else pa.array([], pa.binary())


def _partition_types(table: FileStoreTable) -> list:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return [PyarrowFieldParser.from_paimon_type(f.type) for f in table.partition_keys_fields]


def _partition(values: tuple, types: list) -> str:
    return encode_partition_values(tuple(values), types)
