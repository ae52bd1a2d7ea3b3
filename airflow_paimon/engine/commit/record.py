"""The commit record: what a DAG run's write committed, kept after its snapshot expires.

A retry finds its own commit, and a cleared run its earlier generation's (``reprocess_on_clear``), by the commit
identity its snapshot carries (engine/commit/identity.py). Snapshot expiry deletes snapshots, so the history
alone forgets a commit once its snapshot expired: a retry or a Clear after that would write the run again (an
aggregation table would count it twice). The commit job therefore records each commit of a DAG run in one
small file, right after its snapshot landed (and again on a retry that finds the commit done, so a crash
between the commit and the record heals while the snapshot is still kept):

    {table}/airflow-paimon/commits/{commit_user}-{commit_identifier}.json (engine/files/layout.py)

holding the snapshot id (the last of a deletion-vector write's APPEND and COMPACT, and the first), the commit
kind, the snapshot's time, record count and added files, the DAG id, run id and generation when known, and when
it was recorded. Size per run: one file of about 400 bytes (415 with a 40-character DAG id and a scheduled run
id), per committed run of the table (a retry, or a run that wrote nothing, adds none; each Clear that commits
adds one): a daily DAG adds 3,650 files (1.5 MB) in ten years, an hourly one 87,600 (36 MB). Nothing lists them
but a rollback.

Read only where the kept history cannot answer (``find_commits`` reached an expired snapshot) and trusted only
for a snapshot older than the earliest kept one: a record naming a kept snapshot, or one after the latest, is
stale (a rollback removed that commit) and ignored. A rollback deletes the records of the snapshots it removes
(engine/maintenance/rollback.py), so a later commit that reuses the id and then expires is never taken for the old one.

Retention: kept as long as the table, in its directory, so a table dropped and created again under the same name
starts without records. Snapshot expiry never touches them (it deletes only files of expired snapshots), nor
does orphan-file removal, ours (engine/maintenance/orphans.py leaves the directory out) or Paimon's (it lists
only ``manifest``, ``index``, ``statistics`` and the ``k=v`` / ``bucket-N`` data directories). Deleting records
by hand is safe for runs older than any Clear or retry still to come: a record only matters once its snapshot
expired.

The window between a snapshot and its record (a commit job killed there, its snapshot expired before the retry
looks) is closed by the commit's intent: right before it writes its snapshot, checks passed, the commit job writes
``{commit_user}-{commit_identifier}.intent`` (its time, ~20 bytes) next to the records; the record replaces it (a
commit refused with nothing landed drops it).
A retry that finds neither the commit in the kept history nor its record, but its intent, knows whether the
commit could have landed unseen: only if the earliest snapshot still kept is newer than the intent (less a
minute for clocks that differ between machines). Then it refuses with UnknownCommitError rather than write the run
again; otherwise the commit would be among the kept snapshots, and it did not land. An intent stays behind only
for a commit that never landed and whose run never committed since.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Iterable

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.errors import UnknownCommitError
from airflow_paimon.engine.snapshot.history import first_of_commit

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)

VERSION = 1
CLOCK_SKEW_MS = 60_000  # how far the clocks of the machines writing one table may differ


@dataclass(frozen=True)
class RecordedCommit:
    """A commit as its record holds it; the fields a caller of ``find_commit`` reads of a snapshot (id, commit
    user and identifier, kind, time, record count) have a snapshot's names."""

    id: int  # the commit's last snapshot
    first_id: int  # its first: a deletion-vector write is an APPEND and a COMPACT of one identity
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    delta_record_count: int | None
    files: int | None  # data files the commit added (the snapshot's delta counters)
    dag_id: str | None = None
    run_id: str | None = None
    generation: int | None = None
    recorded_at_ms: int = 0
    version: int = VERSION

    expired = True  # a record is read only for a snapshot no longer kept

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "RecordedCommit":
        doc = json.loads(data)
        known = {k: doc[k] for k in cls.__dataclass_fields__ if k in doc}
        return cls(**known)


def record_commit(table: FileStoreTable, snapshot, files: int | None, run: dict | None = None) -> RecordedCommit:
    """Record ``snapshot``, a DAG run's commit (kept: it just landed, or a retry found it); ``run``: its dag_id,
    run_id and generation, when known. Written whole (write-then-rename), once: a retry finds it there; a record
    of the same identity naming another snapshot (a commit after a rollback removed the one recorded) is
    replaced."""
    existing = read_record(table, snapshot.commit_user, snapshot.commit_identifier)
    if existing is not None and (existing.id, existing.time_millis) == (snapshot.id, snapshot.time_millis):
        return existing
    first = first_of_commit(table, snapshot)
    properties = getattr(snapshot, "properties", None) or {}
    run = run or {}
    record = RecordedCommit(
        id=snapshot.id, first_id=first, commit_user=snapshot.commit_user,
        commit_identifier=snapshot.commit_identifier, commit_kind=snapshot.commit_kind,
        time_millis=snapshot.time_millis, delta_record_count=snapshot.delta_record_count, files=files,
        dag_id=run.get("dag_id") or properties.get("airflow-paimon.dag-id"),
        run_id=run.get("run_id") or properties.get("airflow-paimon.run-id"), generation=run.get("generation"),
        recorded_at_ms=int(time.time() * 1000))
    storage.write_bytes_atomic(layout.commit_record_file(table.table_path, snapshot.commit_user,
                                                         snapshot.commit_identifier), record.to_json())
    drop_intent(table, snapshot.commit_user, snapshot.commit_identifier)  # the record answers from now on
    return record


def record_intent(table: FileStoreTable, commit_user: str, commit_identifier: int) -> None:
    """Before a DAG run's commit: that this identity is about to commit, and when (the module's docstring)."""
    storage.write_bytes_atomic(layout.commit_intent_file(table.table_path, commit_user, commit_identifier),
                               json.dumps({"at_ms": int(time.time() * 1000)}).encode())


def drop_intent(table: FileStoreTable, commit_user: str, commit_identifier: int) -> None:
    """The intent of this identity gone: its record replaced it, or its commit was refused with nothing landed."""
    intent = layout.commit_intent_file(table.table_path, commit_user, commit_identifier)
    if storage.exists(intent):
        storage.delete_file_within(layout.commit_records_dir(table.table_path), intent)


def check_not_lost(table: FileStoreTable, identities: Iterable[tuple[str, int]], earliest_kept: int) -> None:
    """For a commit found neither in the kept history (which starts at ``earliest_kept``) nor in a record: raise
    UnknownCommitError when one of ``identities`` was about to commit after the earliest kept snapshot's time (its
    commit, had it landed, may have expired unseen); else it did not land."""
    earliest = None
    for user, identifier in identities:
        uri = layout.commit_intent_file(table.table_path, user, identifier)
        if not storage.exists(uri):
            continue
        at_ms = json.loads(storage.read_bytes(uri))["at_ms"]
        earliest = earliest or table.snapshot_manager().get_snapshot_by_id(earliest_kept)
        if earliest is None or earliest.time_millis > at_ms - CLOCK_SKEW_MS:
            raise UnknownCommitError(
                f"table {table.identifier.get_full_name()}: the commit of {user} (identifier {identifier}) was about "
                f"to land when its task died (intent at {at_ms} ms), and the snapshots since have expired (the "
                f"earliest kept, {earliest_kept}, is newer): whether it landed cannot be told, so it is not written "
                f"again (it could count twice). If the run's rows are not in the table, delete {uri} and clear the "
                "commit task")


def read_record(table: FileStoreTable, commit_user: str, commit_identifier: int) -> RecordedCommit | None:
    """The record of this identity's commit, None if there is none."""
    uri = layout.commit_record_file(table.table_path, commit_user, commit_identifier)
    if not storage.exists(uri):
        return None
    return RecordedCommit.from_json(storage.read_bytes(uri))


def recorded_commit(table: FileStoreTable, identities: Iterable[tuple[str, int]], after_snapshot_id: int | None,
                    earliest_kept: int) -> RecordedCommit | None:
    """The latest recorded commit of one of ``identities`` whose snapshot expired (older than ``earliest_kept``,
    the first snapshot still kept) and came after ``after_snapshot_id``; None if none. One small read per
    identity (two requests on an object store)."""
    found = [r for user, identifier in identities
             if (r := read_record(table, user, identifier)) is not None
             and (after_snapshot_id or 0) < r.id < earliest_kept]
    return max(found, key=lambda r: r.id, default=None)


def drop_records_after(table: FileStoreTable, snapshot_id: int) -> list[int]:
    """Delete the records of commits after ``snapshot_id`` (a rollback to it removed them); their snapshot ids."""
    where = layout.commit_records_dir(table.table_path)
    dropped = []
    for name in storage.list_dir(where):
        if not layout.is_commit_record(name):
            continue
        uri = storage.join(where, name)
        try:
            record = RecordedCommit.from_json(storage.read_bytes(uri))
        except (ValueError, TypeError, KeyError) as e:  # not ours to judge: leave it
            log.warning("commit record %s is unreadable (%s); left alone", uri, e)
            continue
        if record.id > snapshot_id:
            storage.delete_file_within(where, uri)
            dropped.append(record.id)
    return sorted(dropped)
