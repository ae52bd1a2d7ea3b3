"""Partition expiry as Paimon's PartitionExpire does it (``partition.expiration-strategy = values-time``): a
partition whose time, read from its values, is older than ``now - partition.expiration-time`` is dropped.

All expired partitions go in one OVERWRITE snapshot deleting their files (Paimon's dropPartitions), exactly once
per DAG run: the commit identity comes from (dag_id, run_id, table) and a retry finds its snapshot. The global
key index is not published for an OVERWRITE snapshot; the next bootstrap-index rebuilds it from the table
(engine/index/bootstrap.py), so keys of dropped partitions are never taken as still there."""
from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from airflow_paimon.engine.commit.committer import find_commit
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.overwrite import partition_filter
from airflow_paimon.engine.commit.snapshot_commit import GuardedCommit
from airflow_paimon.engine.errors import TransientError, ValidationError
from airflow_paimon.engine.paimon_compat import (overwrite_changes_provider, overwrite_hash_index_deletes,
                                                 try_commit)
from airflow_paimon.engine.files.scan import latest_snapshot, live_entries
from airflow_paimon.engine.table.table import get_table
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.files.deletion_vectors import partition_index_deletes

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

# Java DateTimeFormatter letters this module reads, as strptime directives (the rest is refused by name)
_JAVA_FIELDS = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S"}
_DEFAULT_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d")  # Paimon's default: a date, or a date and time
PROPERTY = "airflow-paimon.expired-partitions"  # on the snapshot: what a retry that finds it reports


def strptime_format(identifier: str, pattern: str) -> str:
    """``partition.timestamp-formatter`` (e.g. ``yyyyMMdd``, ``yyyy-MM-dd HH:mm``) as a strptime format."""
    out, rest = [], pattern
    while rest:
        field = next((f for f in _JAVA_FIELDS if rest.startswith(f)), None)
        if field:
            out.append(_JAVA_FIELDS[field])
            rest = rest[len(field):]
        elif rest[0].isalpha() or rest[0] in "'[]%":
            raise ValidationError(identifier, "partition.timestamp-formatter: only the fields yyyy, MM, dd, HH, mm "
                                              "and ss (with literal separators) are read here",
                                  value=pattern)
        else:
            out.append(rest[0])
            rest = rest[1:]
    return "".join(out)


class PartitionTime:
    """A partition's time from its values, as Paimon's PartitionTimeExtractor: ``partition.timestamp-pattern``
    (``$dt``, ``$dt $hour:00:00``; default the first partition field's value) parsed with
    ``partition.timestamp-formatter`` (default ``yyyy-MM-dd[ HH:mm:ss]``)."""

    def __init__(self, identifier: str, partition_keys: list[str], options: TableOptions):
        self.keys = list(partition_keys)
        self.pattern, formatter = options.partition_timestamp
        self.formats = (strptime_format(identifier, formatter),) if formatter else _DEFAULT_FORMATS
        if self.pattern:
            unknown = [k for k in re.findall(r"\$(\w+)", self.pattern) if k not in self.keys]
            if unknown:
                raise ValidationError(identifier, "partition.timestamp-pattern names a column that is not a "
                                                  "partition key", column=unknown[0], value=self.pattern)

    def of(self, values: tuple) -> datetime | None:
        """None when the values do not read as a time (Paimon skips such partitions too)."""
        by_key = {k: "" if v is None else str(v) for k, v in zip(self.keys, values)}
        if self.pattern:  # longest names first: $hour must not be read as $h + "our"
            text = self.pattern
            for k in sorted(by_key, key=len, reverse=True):
                text = text.replace("$" + k, by_key[k])
        else:
            text = by_key[self.keys[0]]
        for fmt in self.formats:
            try:
                return datetime.strptime(text, fmt)
            except ValueError:
                continue
        return None


def expired_partitions(table: FileStoreTable, now: datetime, expiration_ms: int | None = None) -> list[tuple]:
    """The partitions with live files at the latest snapshot whose time is before ``now - expiration``."""
    identifier = table.identifier.get_full_name()
    options = TableOptions.of(table)
    if not table.partition_keys:
        raise ValidationError(identifier, "partition expiry needs a partitioned table")
    expiration_ms = options.partition_expiration(expiration_ms)
    if expiration_ms is None:
        raise ValidationError(identifier, "no partition.expiration-time: set the table option or give "
                                          "expiration_time")
    times = PartitionTime(identifier, table.partition_keys, options)
    cutoff = now - timedelta(milliseconds=expiration_ms)
    partitions = {tuple(e.partition.values) for e in live_entries(table, latest_snapshot(table))}
    expired = []
    for values in sorted(partitions, key=lambda p: tuple(str(v) for v in p)):
        at = times.of(values)
        if at is None:
            log.warning("%s: partition %s does not read as a time; not expired", identifier, values)
        elif at < cutoff:
            expired.append(values)
    return expired


def expire_partitions(catalog_options: dict, identifier: str, identity: CommitIdentity, now: datetime,
                      expiration_ms: int | None = None, dry_run: bool = False) -> dict:
    """Drop the expired partitions of ``identifier`` in one OVERWRITE snapshot (once per ``identity``)."""
    table = get_table(catalog_options, identifier)
    result = {"table": identifier, "already_committed": False, "dry_run": dry_run}
    done = find_commit(table, identity.commit_user, identity.commit_identifier, None)
    if done is not None:  # a retry after this run's drop committed
        return {**result, "snapshot_id": done.id, "already_committed": True,
                "expired_partitions": _described(table, done.properties)}
    expired = expired_partitions(table, now, expiration_ms)
    latest = latest_snapshot(table)
    result |= {"snapshot_id": latest.id if latest else None,
               "expired_partitions": [dict(zip(table.partition_keys, map(str, p))) for p in expired]}
    if dry_run or not expired:
        return result
    # No stale-index guard: the drop is planned again on whatever is latest at each attempt (files a writer adds
    # meanwhile to an expired partition go too, as in Paimon); that writer's index is refused at its own commit.
    # The index deletes too: pypaimon takes them as one list, so each attempt refills it for its own snapshot
    # (a writer's deletion vectors for a dropped partition, added since the first attempt, go as well).
    committer = GuardedCommit(table, identity.commit_user, lambda at: None)
    where = partition_filter(table, expired)
    files = overwrite_changes_provider(committer, where, [])
    index_deletes: list = []

    def plan(at):
        index_deletes[:] = [*overwrite_hash_index_deletes(committer, where),
                            *partition_index_deletes(table, at, expired)]
        return files.provide(at)

    try:
        try_commit(committer, commit_kind="OVERWRITE", commit_identifier=identity.commit_identifier,
                   commit_entries_plan=plan, changelog_entries=[], detect_conflicts=True, allow_rollback=False,
                   index_deletes=index_deletes, index_adds=[],
                   snapshot_properties={PROPERTY: json.dumps(result["expired_partitions"])},
                   allow_empty_commit=False)
    finally:
        committer.close()
    snap = find_commit(table, identity.commit_user, identity.commit_identifier, None)
    if snap is None:  # never reported as done without its snapshot
        raise TransientError(f"table {identifier}: the partition drop committed but no snapshot carries "
                             f"{identity.commit_user}; re-run the task")
    log.info("%s: dropped %d expired partitions in snapshot %s", identifier, len(expired), snap.id)
    return {**result, "snapshot_id": snap.id}


def _described(table: FileStoreTable, properties) -> list:
    text = (properties or {}).get(PROPERTY)
    return json.loads(text) if text else []
