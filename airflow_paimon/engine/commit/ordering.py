"""Which day's rows win when DAG runs commit out of their logical-date order (a backfill run backwards, runs of a
backfill with ``max_active_runs`` > 1 racing, a day reprocessed after later days).

Every commit records its DAG run's logical date in its snapshot's properties (LOGICAL_DATE, epoch milliseconds).
In a ``deduplicate`` table without ``sequence.field`` the row of the latest logical date wins: a run leaves out
every row whose primary key a run of a *later* logical date wrote (an APPEND or OVERWRITE snapshot still in the
table's history carrying a later date), so an older day never replaces a newer day's row, nor brings back a key a
newer day deleted, because it committed later. Rows of keys no later run wrote are written as usual.

Other tables keep Paimon's own order: ``sequence.field`` when the table has one; ``aggregation`` sums in any
order; ``partial-update`` and ``first-row`` merge in commit order. A commit without a logical date (another
engine's, or a snapshot expired since) orders nothing."""
from __future__ import annotations

import logging

import pyarrow as pa

from airflow_paimon.engine.commit.properties import logical_date_of
from airflow_paimon.engine.data_files import read_key_rows
from airflow_paimon.engine.merge.merge_engine import MergeRules
from airflow_paimon.engine.scan import added_entries, data_file_path

log = logging.getLogger(__name__)

WRITES = ("APPEND", "OVERWRITE")  # the commit kinds that change rows (COMPACT rewrites them as they are)


def ordered_by_logical_date(table) -> bool:
    """Whether a run leaves out the keys later runs wrote: a deduplicate primary-key table without its own
    ``sequence.field``."""
    if not table.primary_keys:
        return False
    return MergeRules.of(table.table_schema.options, table.identifier.get_full_name()).ordered_by_logical_date


def later_commits(table, logical_date_ms: int) -> list:
    """The snapshots still in the table's history that wrote rows for a DAG run of a later logical date."""
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    found = []
    for sid in range(latest.id if latest else 0, 0, -1):
        snap = manager.get_snapshot_by_id(sid)
        if snap is None:  # expired: nothing older is kept
            break
        stamp = logical_date_of(snap)
        if snap.commit_kind in WRITES and stamp is not None and stamp > logical_date_ms:
            found.append(snap)
    return found


def superseded_keys(table, logical_date_ms: int | None) -> pa.Table | None:
    """The primary keys (their columns, distinct) that DAG runs of a later logical date than ``logical_date_ms``
    wrote, upserts and deletes alike: the rows a run of that date must leave out. None: nothing to leave out."""
    if logical_date_ms is None or not ordered_by_logical_date(table):
        return None
    later = later_commits(table, logical_date_ms)
    if not later:
        return None
    keys = list(table.primary_keys)
    parts = [read_key_rows(data_file_path(table, tuple(e.partition.values), e.bucket, e.file), keys).select(keys)
             for snap in later for e in added_entries(table, snap)]
    if not parts:
        return None
    found = pa.concat_tables(parts).group_by(keys).aggregate([])
    log.info("%s: snapshots %s of runs with a later logical date wrote %s key(s); this run leaves their rows out",
             table.identifier.get_full_name(), [s.id for s in later], found.num_rows)
    return found
