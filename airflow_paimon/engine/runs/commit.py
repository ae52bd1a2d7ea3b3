"""commit: the staged messages of one DAG run become one snapshot, exactly once, and the run's index
changes become the index of that snapshot. Driver-only: no Spark work, so the commit job
(spark_jobs/commit.py) and the tests' local runner call this module directly.

Every delete here is confined (storage.delete_dir_within): the run's staging and abandoned staging to the
table's staging directory, old index directories to the table's index directory, old job results to the
DAG's results directory — whatever the table name or the URIs in the spec resolve to."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.commit.committer import commit_once, find_commit
from airflow_paimon.engine.commit.properties import RunClock, snapshot_properties
from airflow_paimon.engine.commit.record import RecordedCommit, record_commit
from airflow_paimon.engine.commit.staging import abandoned, load, runs
from airflow_paimon.engine.errors import MissingFileError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.snapshot.history import fingerprint
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.store import clean_up, publish_committed, staged_shards
from airflow_paimon.engine.files.scan import added_file_count
from airflow_paimon.engine.jobs.specs import CommitResult, CommitSpec
from airflow_paimon.engine.table.table import get_table

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)


def run_commit(spec: CommitSpec) -> CommitResult:
    identifier, staging_uri = spec.table, spec.staging_uri
    # refused before anything is committed: a staging URI that does not resolve inside its table's staging
    table_staging = confined_parent(staging_uri, identifier, spec.commit_user, root=spec.staging_root)
    table = get_table(spec.catalog_options, identifier)
    if not storage.exists(layout.staged_file(staging_uri)):
        return _already_done(table, spec)
    staged = load(table, staging_uri)
    index_uri = staged.extra.get("index_uri")
    if index_uri:
        confined_parent(index_uri, identifier)
    crash_point("commit.before_commit")
    overwrite = staged.extra.get("write_mode") == "overwrite"
    snapshot_id, already, rebased_over = commit_once(
        table, staged.messages, staged.commit_user, staged.commit_identifier, staged.base_snapshot_id,
        overwrite=overwrite, base_fingerprint=staged.base_snapshot_fingerprint, planned=staged.planned,
        properties=snapshot_properties(staged_clock(staged.extra), spec.rewrites))
    log.debug("%s: snapshot %s (already committed: %s%s)", identifier, snapshot_id, already,
              ", partition overwrite" if overwrite else "")
    if rebased_over:
        log.info("%s: snapshots %s of other writers landed after this run's base %s and write none of its keys: "
                 "committed on top of them as snapshot %s (rebased; its key index is left to the next bootstrap)",
                 identifier, rebased_over, staged.base_snapshot_id, snapshot_id)
    ours = snapshot_id is not None and snapshot_id != staged.base_snapshot_id  # else: nothing was committed
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id) if ours else None  # one small file
    if snapshot is not None:  # what outlives the snapshot's expiry (engine/commit/record.py)
        described = _described(table, snapshot)
        record_commit(table, snapshot, described["files"], staged.extra.get("run"))
    else:  # nothing committed, or a retry after the snapshot expired: its record reports it
        snapshot = find_commit(table, staged.commit_user, staged.commit_identifier, staged.base_snapshot_id,
                               recorded=True) if ours else None
        described = _described(table, snapshot)
    crash_point("commit.before_publish")
    # an OVERWRITE snapshot gets no published index: the next bootstrap rebuilds it (engine/commit/overwrite.py);
    # nor does a rebased one: its index would miss the other writers' keys (engine/commit/rebase.py)
    if isinstance(snapshot, RecordedCommit):  # expired: no index to publish for it, nothing to describe anew
        pass
    elif snapshot is not None and index_uri and not overwrite and not rebased_over:
        # snapshot is this run's own commit (found by its identity), so the index published for it holds
        # exactly this run's changes; also on a retry that finds the commit done: the index may not be out yet
        publish_index(index_uri, staged, staging_uri, snapshot)
    crash_point("commit.before_clean_up")
    storage.delete_dir_within(table_staging, staging_uri)  # committed and published: the staging has served
    _drop_abandoned_staging(table_staging, spec.staging_retention_seconds)
    if spec.result_uri:
        drop_old_results(spec.result_uri, spec.staging_retention_seconds)
    return CommitResult(table=identifier, snapshot_id=snapshot_id, base_snapshot_id=staged.base_snapshot_id,
                        already_committed=already, rebased_over=rebased_over, rewrites=spec.rewrites,
                        **described)


def staged_clock(extra: dict) -> RunClock | None:
    """The run's clock its assign-and-write staged (a staging of an earlier version holds its logical date only)."""
    if extra.get("clock"):
        return RunClock.from_dict(extra["clock"])
    legacy = extra.get("logical_date_ms")
    return None if legacy is None else RunClock(as_of_ms=legacy, as_of_from="logical_date", logical_date_ms=legacy)


def _described(table: FileStoreTable, snapshot) -> dict:
    """The CommitResult fields describing the run's snapshot, from Paimon's own counters (the same on a retry
    that finds it committed); none without one (nothing committed)."""
    if snapshot is None:
        return {}
    if isinstance(snapshot, RecordedCommit):  # its snapshot expired: what the record holds
        return {"commit_kind": snapshot.commit_kind, "delta_record_count": snapshot.delta_record_count,
                "files": snapshot.files, "snapshot_fingerprint": fingerprint(snapshot)}
    return {"commit_kind": snapshot.commit_kind, "delta_record_count": snapshot.delta_record_count,
            "files": added_file_count(table, snapshot), "snapshot_fingerprint": fingerprint(snapshot)}


def confined_parent(uri: str, *tail: str, root: str | None = None) -> str:
    """For ``uri`` built as layout.under(root, *tail): layout.under(root, *tail[:-1]), after checking that
    ``uri`` is exactly that (a table name with ``..`` or ``%2F`` would otherwise aim clean-ups at other files).
    Without ``root``, the root is what precedes the tail in ``uri``."""
    uri = uri.rstrip("/")
    suffix = "/" + "/".join(tail)
    if not uri.endswith(suffix) or (root is not None and uri != storage.join(root, *tail)):
        raise storage.EscapeError(f"table {tail[0]}: {uri} is not <root>{suffix}; refusing to clean up under it")
    root = uri[: -len(suffix)]
    # every segment safe, and inside the root as the file system resolves it
    layout.under(root, validate_identifier(tail[0]), *tail[1:])
    return layout.under(root, *tail[:-1]) if len(tail) > 1 else root


def _already_done(table: FileStoreTable, spec: CommitSpec) -> CommitResult:
    """Nothing staged: a retry after this run committed and cleaned up, or a run that never wrote."""
    snap = find_commit(table, spec.commit_user, spec.commit_identifier, spec.base_snapshot_id, recorded=True)
    if snap is None:  # the staging went (a rewrite emptied it and was killed, or it was dropped as abandoned)
        raise MissingFileError(f"table {spec.table}: nothing staged at {spec.staging_uri} and no snapshot of this "
                               "run (a rewrite of it was cut off, or its staging was dropped); nothing committed, "
                               "the run's batch is written again from bootstrap-index")
    described = _described(table, snap)
    if not isinstance(snap, RecordedCommit):  # kept: record it (again), healing a crash before the record
        record_commit(table, snap, described["files"])
    return CommitResult(table=spec.table, snapshot_id=snap.id, base_snapshot_id=spec.base_snapshot_id,
                        already_committed=True, rewrites=spec.rewrites, **described)


def publish_index(index_uri: str, staged, staging_uri: str, snapshot) -> None:
    """Publish the run's index changes as the index of ``snapshot``, the one it committed (once)."""
    existing = read_manifest(index_uri, snapshot.id)
    if existing is not None and existing.snapshot_fingerprint in (None, fingerprint(snapshot)):
        return
    base = read_manifest(index_uri, staged.base_snapshot_id)
    if base is None or (staged.base_snapshot_fingerprint and base.snapshot_fingerprint
                        and base.snapshot_fingerprint != staged.base_snapshot_fingerprint):
        log.warning("index of base snapshot %s is gone or of another snapshot; the next bootstrap rebuilds",
                    staged.base_snapshot_id)
        return
    publish_committed(index_uri, base, staged_shards(staging_uri), snapshot.id, staged.commit_user,
                      fingerprint(snapshot))
    clean_up(index_uri)


def _drop_abandoned_staging(table_staging: str, retention_seconds: float) -> None:
    """Staging of other runs of this table that is abandoned never committed: drop it (its data files are
    orphans for the orphan-file cleanup)."""
    now = time.time()
    for uri in runs(table_staging):
        if abandoned(uri, now, retention_seconds):
            log.info("dropping abandoned staging %s", uri)
            storage.delete_dir_within(table_staging, uri)


def drop_old_results(result_uri: str, retention_seconds: float) -> None:
    """Result files of this DAG's runs ({results_root}/{dag}/{run}/{task}.json) older than the retention:
    XCom holds what the tasks returned, the files only served the hand-over."""
    dag_results = layout.dag_results_dir(result_uri)
    cutoff = time.time() - retention_seconds
    # Only that layout is touched: run directories holding nothing but result JSON files (a job run by hand
    # with a result URI elsewhere must not clean up that folder).
    for run in storage.list_dir(dag_results):
        run_uri = storage.join(dag_results, run)
        if not storage.is_dir(run_uri):
            continue
        files = storage.list_dir(run_uri)
        if any(not layout.is_result_file(f) for f in files):
            continue
        old = [f for f in files if storage.mtime(storage.join(run_uri, f)) < cutoff]
        for f in old:
            storage.delete_file_within(dag_results, storage.join(run_uri, f))
        if files and len(old) == len(files):
            storage.delete_dir_within(dag_results, run_uri)
