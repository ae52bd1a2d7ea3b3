"""Incremental read between two snapshots, as Paimon's ``incremental-between`` in ``diff`` scan mode
(``incremental-between-scan-mode=diff``, Java's IncrementalDiffSplitRead): start exclusive, end inclusive;
per partition the table's rows at the start are compared with those at the end, key by key:

- a key only at the end → ``+I`` with its new values; a key at both with other values → ``+U`` (new values);
- a key only at the start → ``-D`` (its last values): deleted, or (cross-partition tables) moved to another
  partition, where it shows as ``+I``.

Buckets whose data files did not change between the two snapshots are skipped without being read, so the
cost follows the change, not the table. Compactions and overwrites in between need no special case (the
diff is of table states). A table with a changelog producer is read from its changelog instead
(engine/read/changelog_read.py) unless the diff is asked for: ``scan_mode``.
A bucket's rows are merged exactly as the table's merge engine merges them (engine/merge/merge_function.py).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.codec.kinds import DELETE_TEXT, INSERT_TEXT, UPDATE_AFTER_TEXT
from airflow_paimon.engine.codec.system_fields import key_columns
from airflow_paimon.engine.merge.merge_function import merge_key_values
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.files.data_files import read_as, without_rows
from airflow_paimon.engine.files.scan import buckets_at
from airflow_paimon.engine.snapshot.snapshots import parse_cursor, resume_point, rollback_note
from airflow_paimon.engine.options import TableOptions

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

ROW_KIND_COLUMN = "row_kind"
SCAN_MODES = ("auto", "diff", "changelog")


def scan_mode_of(table: FileStoreTable, identifier: str, requested: str) -> str:
    """``diff`` or ``changelog``: ``auto`` reads the changelog where the table has a changelog producer (as
    Paimon's ``auto`` does), the diff otherwise; ``changelog`` of a table without one is refused."""
    if requested not in SCAN_MODES:
        raise ValidationError(identifier, f"scan_mode must be one of {list(SCAN_MODES)}", value=requested)
    producer = TableOptions.of(table).changelog_producer
    if requested == "auto":
        return "diff" if producer == "none" else "changelog"
    if requested == "changelog" and producer == "none":
        raise ValidationError(identifier, "scan_mode 'changelog' needs a table with a changelog producer; this one "
                                          "has none (use 'diff')", option="changelog-producer", value=producer)
    return requested


@dataclass(frozen=True)
class PartitionDiff:
    """The buckets of one partition whose files changed: (bucket, files at the start, files at the end, and in
    a deletion-vector table the rows their vectors mark at the start and at the end: path -> positions)."""
    partition: tuple
    buckets: tuple[tuple[int, tuple[str, ...], tuple[str, ...], dict, dict], ...]


def snapshot_range(table: FileStoreTable, identifier: str, start_id: int, end_id: int | None) -> tuple[int, int]:
    """(start, end) checked against the table: end defaults to the latest snapshot; 0 <= start <= end; both
    readable (not expired). A clear error naming the table and the id otherwise."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    end = (latest.id if latest else 0) if end_id is None else int(end_id)
    start = int(start_id)
    if start < 0 or end < start:
        raise ValidationError(identifier, f"incremental range ({start}, {end}]: need 0 <= start <= end",
                              value=f"{start},{end}")
    for snapshot_id in (start, end):
        if snapshot_id and manager.get_snapshot_by_id(snapshot_id) is None:
            raise ValidationError(identifier, f"snapshot {snapshot_id} does not exist (expired, or not yet written; "
                                  f"latest is {latest.id if latest else None})", value=snapshot_id)
    return start, end


def start_after(table: FileStoreTable, identifier: str, start_id: int, start_snapshot: dict | None) -> tuple[int,
                int | None]:
    """(the range's start, None); or, when ``start_snapshot`` (the start's identity) shows the table was rolled
    back below it, (the snapshot rolled back to, ``start_id``), logged: a start whose id a later commit reused
    would skip the commits up to it."""
    if not start_snapshot:
        return start_id, None
    resumed, rolled_from = resume_point(table, parse_cursor({**start_snapshot, "snapshot_id": start_id}))
    if rolled_from is None:
        return start_id, None
    log.warning("%s", rollback_note(identifier, rolled_from, resumed))
    return resumed["snapshot_id"], rolled_from


def plan_incremental(table: FileStoreTable, start: int, end: int) -> list[PartitionDiff]:
    """Per partition, the buckets whose live files differ between snapshot ``start`` and ``end`` (0: the empty
    table). The unit is the partition, not the bucket: a key deleted and written again can change bucket
    within its partition (dynamic buckets), and must then read as +U, not as -D in one bucket and +I in another."""
    from airflow_paimon.engine.files.deletion_vectors import deleted_rows_at, level_0_paths

    manager = table.snapshot_manager()
    at: dict[tuple, dict[str, tuple]] = {}
    marked: dict[str, dict] = {}
    for side, snapshot_id in (("before", start), ("after", end)):
        snapshot = manager.get_snapshot_by_id(snapshot_id) if snapshot_id else None
        marked[side] = deleted_rows_at(table, snapshot)  # {} unless a deletion-vector table
        hidden = level_0_paths(table, snapshot)  # what readers of a deletion-vector table skip
        for b in buckets_at(table, snapshot):
            at.setdefault((b.partition, b.bucket), {})[side] = tuple(p for p in b.paths if p not in hidden)
    changed: dict[tuple, list] = {}
    for (partition, bucket), sides in sorted(at.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        before, after = tuple(sides.get("before", ())), tuple(sides.get("after", ()))
        deleted = [{p: marked[side][p] for p in paths if p in marked[side]}
                   for side, paths in (("before", before), ("after", after))]
        # a file's vector only grows while it lives: a changed vector has more marks
        if set(before) != set(after) or ({p: len(v) for p, v in deleted[0].items()}
                                         != {p: len(v) for p, v in deleted[1].items()}):
            changed.setdefault(partition, []).append((bucket, before, after, *deleted))
    return [PartitionDiff(p, tuple(buckets)) for p, buckets in changed.items()]


def bucket_rows(table: FileStoreTable, paths: tuple[str, ...], deleted: dict | None = None) -> pa.Table:
    """The live rows of one bucket made of ``paths``: every version of a key merged by the merge engine,
    retractions dropped; the table's columns only. ``deleted``: path -> row positions a deletion vector marks."""
    from airflow_paimon.engine.write.bucket_writer import key_value_schema

    schema = key_value_schema(table)
    row_schema = pa.schema([f for f in schema if not f.name.startswith("_")])
    if not paths:
        return row_schema.empty_table()
    # a file of an older schema: added columns null
    kv = pa.concat_tables([without_rows(read_as(p, schema), (deleted or {}).get(p)) for p in paths])
    keys = key_columns(table.trimmed_primary_keys)
    merged = merge_key_values(kv, keys, TableOptions.of(table), drop_delete=True,
                              identifier=table.identifier.get_full_name(), primary_keys=list(table.primary_keys))
    return merged.select(row_schema.names)


def diff_rows(before: pa.Table, after: pa.Table, keys: list[str], row_kind_column: str = ROW_KIND_COLUMN
              ) -> pa.Table:
    """The rows of ``after`` that are new (+I) or changed (+U), and the rows of ``before`` whose key is gone
    (-D), each with a row-kind column; -D rows first (a consumer applying them in order never deletes a key
    after re-inserting it). Values compare null-safely; keys are unique on each side."""
    values = [n for n in after.column_names if n not in keys]
    tag = "__after"
    joined = before.append_column("__in_before", _true(before.num_rows)).join(
        after.append_column("__in_after", _true(after.num_rows)), keys, join_type="full outer",
        left_suffix="", right_suffix=tag, coalesce_keys=True)
    in_before = pc.fill_null(joined.column("__in_before"), False)
    in_after = pc.fill_null(joined.column("__in_after"), False)
    same = _true(joined.num_rows)
    for v in values:
        a, b = joined.column(v), joined.column(v + tag)
        equal = pc.if_else(pc.or_(pc.is_null(a), pc.is_null(b)), pc.and_(pc.is_null(a), pc.is_null(b)),
                           pc.equal(a, b))
        same = pc.and_(same, equal)
    inserted = pc.and_(in_after, pc.invert(in_before))
    updated = pc.and_(pc.and_(in_after, in_before), pc.invert(same))
    deleted = pc.and_(in_before, pc.invert(in_after))
    new_side = joined.select(keys + [v + tag for v in values]).rename_columns(keys + values)
    old_side = joined.select(keys + values)
    parts = []
    order = [(k, "ascending") for k in keys]
    for kind, mask, side in ((DELETE_TEXT, deleted, old_side), (INSERT_TEXT, inserted, new_side),
                             (UPDATE_AFTER_TEXT, updated, new_side)):
        rows = side.filter(mask).select(after.column_names).sort_by(order)
        kinds = pa.array(np.full(rows.num_rows, kind, dtype=object), pa.string())
        parts.append(rows.append_column(row_kind_column, kinds))
    return pa.concat_tables(parts)


def _true(n: int) -> pa.Array:
    return pa.array(np.ones(n, dtype=bool))


def diff_partition(table: FileStoreTable, work: PartitionDiff, row_kind_column: str = ROW_KIND_COLUMN) -> pa.Table:
    """The incremental rows of one partition (see the module doc): -D first, then +I, +U; by primary key.
    Each bucket is merged on its own (sequence numbers are per bucket), then the partition is compared."""
    before = pa.concat_tables([bucket_rows(table, b[1], b[3]) for b in work.buckets])
    after = pa.concat_tables([bucket_rows(table, b[2], b[4]) for b in work.buckets])
    keys = list(table.primary_keys)
    return diff_rows(before, after, keys, row_kind_column)
