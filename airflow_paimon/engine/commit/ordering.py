"""Whose rows win when DAG runs commit out of the order of their data (a backfill run backwards, runs of a backfill
with ``max_active_runs`` > 1 racing, a day reprocessed after later days, a manual run beside scheduled ones, two
DAGs writing one table).

Each run has a clock (engine/commit/properties.py RunClock): the instant its data is *as of* — the end of its data
interval, else its logical date, else its ``run_after`` (operators/clock.py) — recorded in its snapshot's
properties with its DAG, run and run type. In a ``deduplicate`` table without ``sequence.field``, a run whose
``write_order`` is ``as_of`` (the default) leaves out of its batch

- every row whose primary key a run of a *later* as-of instant wrote (the keys in the data files of APPEND and
  OVERWRITE snapshots still in the table's history), upserts and deletes alike, and
- every row going into a partition a run of a later as-of instant overwrote (an OVERWRITE snapshot replaced the
  partition whole: an older row must not bring back a key it removed),

so data as of an earlier instant never replaces data as of a later one because it committed later. Equal instants
keep commit order. A run with ``write_order="commit"`` leaves nothing out and is not ordered against: Paimon's
commit order, as for another engine's commit. Other tables keep Paimon's own order: ``sequence.field`` when the
table has one; ``aggregation`` sums in any order; ``partial-update`` and ``first-row`` merge in commit order."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.commit.properties import RunClock
from airflow_paimon.engine.files.data_files import read_key_rows
from airflow_paimon.engine.snapshot.history import newest_first
from airflow_paimon.engine.merge.merge_engine import MergeRules
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.files.scan import data_file_path, delta_entries

log = logging.getLogger(__name__)

WRITES = ("APPEND", "OVERWRITE")  # the commit kinds that change rows (COMPACT rewrites them as they are)
SNAPSHOT = "__airflow_paimon_snapshot"  # column of Superseding.keys / .partitions: the later snapshot's id


def ordered_by_clock(table) -> bool:
    """Whether a run leaves out the keys runs of a later as-of instant wrote: a deduplicate primary-key table
    without its own ``sequence.field``."""
    if not table.primary_keys:
        return False
    return MergeRules.of(TableOptions.of(table)).ordered_by_clock


def later_commits(table, as_of_ms: int) -> list[tuple[Any, RunClock]]:
    """(snapshot, its run's clock) of the snapshots still in the table's history that wrote rows for a run ordered
    by a later as-of instant than ``as_of_ms``, newest first."""
    found = []
    for snap in newest_first(table):
        clock = RunClock.of_snapshot(snap)
        if snap.commit_kind in WRITES and clock is not None and clock.ordered and clock.as_of_ms > as_of_ms:
            found.append((snap, clock))
    return found


@dataclass(frozen=True)
class Superseding:
    """What runs of a later as-of instant wrote, that a run of an earlier one leaves out of its batch."""

    primary_keys: list[str]
    keys: pa.Table | None  # primary-key columns + SNAPSHOT (the latest later snapshot that wrote the key)
    partitions: pa.Table | None  # partition columns + SNAPSHOT: partitions a later run overwrote
    whole_table: int | None  # an unpartitioned table a later run overwrote: that snapshot's id
    runs: dict[int, RunClock]  # snapshot id → its run's clock

    def partition_keys(self) -> list[str]:
        return [] if self.partitions is None else [n for n in self.partitions.column_names if n != SNAPSHOT]


def superseding(table, clock: RunClock | None) -> Superseding | None:
    """What a run of ``clock`` must leave out (None: nothing): the keys later runs wrote, the partitions they
    overwrote."""
    if clock is None or not clock.ordered or not ordered_by_clock(table):
        return None
    later = later_commits(table, clock.as_of_ms)
    if not later:
        return None
    keys, partition_keys = list(table.primary_keys), list(table.partition_keys)
    key_parts, partition_rows, whole_table = [], [], None
    for snap, _ in later:
        entries = delta_entries(table, snap)
        for e in entries:
            if e.kind == FileKind.ADD:  # the keys it wrote
                rows = read_key_rows(data_file_path(table, tuple(e.partition.values), e.bucket, e.file), keys)
                key_parts.append(rows.select(keys).append_column(SNAPSHOT, pa.array(np.full(rows.num_rows,
                                                                                            snap.id, np.int64))))
        if snap.commit_kind == "OVERWRITE":
            if not partition_keys:
                whole_table = max(whole_table or 0, snap.id)
            partition_rows += [(*e.partition.values, snap.id) for e in entries]
    found = Superseding(keys, _latest_per(key_parts, keys), _partitions(partition_rows, partition_keys), whole_table,
                        {snap.id: c for snap, c in later})
    log.info("%s: snapshots %s of runs as of a later instant than %s wrote %s key(s)%s",
             table.identifier.get_full_name(), sorted(found.runs), clock.as_of_ms,
             0 if found.keys is None else found.keys.num_rows,
             f" and overwrote {found.partitions.num_rows} partition(s)" if found.partitions is not None else "")
    return found


def _latest_per(parts: list[pa.Table], names: list[str]) -> pa.Table | None:
    """One row per distinct ``names`` with the latest SNAPSHOT that wrote it."""
    if not parts:
        return None
    grouped = pa.concat_tables(parts).group_by(names).aggregate([(SNAPSHOT, "max")])
    return grouped.rename_columns([*names, SNAPSHOT]) if grouped.column_names[-1] != SNAPSHOT else grouped


def _partitions(rows: list[tuple], names: list[str]) -> pa.Table | None:
    if not rows or not names:
        return None
    table = pa.table({name: [r[i] for r in rows] for i, name in enumerate([*names, SNAPSHOT])})
    return _latest_per([table], names)


def left_out_arrow(source: pa.Table, found: Superseding) -> tuple[pa.Table, dict[int, int]]:
    """``source`` (an Arrow table) without the rows ``found`` supersedes, and {snapshot id: distinct keys left out
    for it}: the executors' rule (spark/assign_write.py does the same with joins)."""
    keys = found.primary_keys
    if found.whole_table is not None:
        return source.slice(0, 0), {found.whole_table: _distinct(source, keys)} if source.num_rows else {}
    rows = pa.array(np.arange(source.num_rows, dtype=np.int64))
    hit = np.full(source.num_rows, -1, np.int64)  # the snapshot a row is left out for; -1: kept
    for table in (found.keys, found.partitions):  # a key a later run wrote first, then a partition it overwrote
        if table is None:
            continue
        names = [n for n in table.column_names if n != SNAPSHOT]
        probe = pa.table({**{n: source.column(n) for n in names}, "__row": rows})
        typed = table.cast(pa.schema([*(probe.schema.field(n) for n in names), table.schema.field(SNAPSHOT)]))
        joined = probe.join(typed, names, join_type="inner")
        at, sid = joined.column("__row").to_numpy(), joined.column(SNAPSHOT).to_numpy()
        free = hit[at] < 0
        hit[at[free]] = sid[free]
    out = hit >= 0
    if not out.any():
        return source, {}
    dropped = source.select(keys).filter(pa.array(out)).append_column(SNAPSHOT, pa.array(hit[out]))
    counts = (dropped.group_by(keys).aggregate([(SNAPSHOT, "max")]).group_by(f"{SNAPSHOT}_max")
              .aggregate([([], "count_all")]))
    return source.filter(pa.array(~out)), dict(zip(counts.column(f"{SNAPSHOT}_max").to_pylist(),
                                                   counts.column("count_all").to_pylist()))


def _distinct(source: pa.Table, keys: list[str]) -> int:
    return source.select(keys).group_by(keys).aggregate([]).num_rows


def report(identifier: str, clock: RunClock, found: Superseding, left: dict[int, int]) -> dict:
    """Log what the run left out and whose write it yielded to — a WARNING when that was another DAG's run or a run
    of another run type (a manual run, a backfill) — and the counters for its result: ``superseded_keys`` (later
    runs of its own DAG and run type), ``superseded_keys_by_others`` and ``superseded_by`` (one entry per
    snapshot yielded to)."""
    own, others, by = 0, 0, []
    for sid, count in sorted(left.items()):
        other = found.runs[sid]
        entry = {"snapshot_id": sid, "dag_id": other.dag_id, "run_id": other.run_id, "run_type": other.run_type,
                 "as_of_ms": other.as_of_ms, "keys": count}
        by.append(entry)
        what = (f"{identifier}: {count} key(s) left out of this run (as of {clock.as_of_ms} by its "
                f"{clock.as_of_from}): snapshot {sid} of run {other.run_id} of DAG {other.dag_id} "
                f"({other.run_type}) wrote them as of a later instant ({other.as_of_ms})")
        if clock.same_kind_of_run(other):
            own += count
            log.info(what)
        else:
            others += count
            log.warning("%s; set write_order='commit' on the writes where commit order should win", what)
    return {"superseded_keys": own, "superseded_keys_by_others": others, "superseded_by": by}
