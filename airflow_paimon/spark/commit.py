"""commit: the staged messages of one DAG run become one snapshot, exactly once, and the run's index
changes become the index of that snapshot. Driver-only: no Spark work."""
from __future__ import annotations

import logging
import time

from airflow_paimon.engine import storage
from airflow_paimon.engine.commit.committer import commit_once, find_commit
from airflow_paimon.engine.commit.staging import STAGED_FILE, load
from airflow_paimon.engine.errors import PaimonJobError
from airflow_paimon.engine.faults import crash_point
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.store import clean_up, publish_committed, staged_shards
from airflow_paimon.engine.table import get_table

log = logging.getLogger(__name__)
STAGING_RETENTION_SECONDS = 7 * 86400  # staging of runs that never committed is dropped after this


def run_commit(spec: dict) -> dict:
    identifier, staging_uri = spec["table"], spec["staging_uri"]
    table = get_table(spec["catalog_options"], identifier)
    if not storage.exists(storage.join(staging_uri, STAGED_FILE)):
        return _already_done(table, spec)
    staged = load(table, staging_uri)
    crash_point("commit.before_commit")
    snapshot_id, already = commit_once(table, staged.messages, staged.commit_user, staged.commit_identifier,
                                       staged.base_snapshot_id)
    log.info("%s: snapshot %s (already committed: %s)", identifier, snapshot_id, already)
    crash_point("commit.before_publish")
    if snapshot_id is not None and snapshot_id != staged.base_snapshot_id and staged.extra.get("index_uri"):
        # also on a retry that finds the commit done: the index of the new snapshot may not be out yet
        publish_index(staged.extra["index_uri"], staged, staging_uri, snapshot_id)
    crash_point("commit.before_clean_up")
    storage.delete_dir(staging_uri)  # committed and published: the staging has served
    _drop_abandoned_staging(staging_uri, spec.get("staging_retention_seconds", STAGING_RETENTION_SECONDS))
    return {"table": identifier, "snapshot_id": snapshot_id, "base_snapshot_id": staged.base_snapshot_id,
            "already_committed": already}


def _already_done(table, spec: dict) -> dict:
    """Nothing staged: a retry after this run committed and cleaned up, or a run that never wrote."""
    snap = find_commit(table, spec.get("commit_user"), spec.get("commit_identifier"), spec.get("base_snapshot_id"))
    if snap is None:
        raise PaimonJobError(f"table {spec['table']}: nothing staged at {spec['staging_uri']} and no snapshot "
                             "of this run; re-run from bootstrap-index")
    return {"table": spec["table"], "snapshot_id": snap.id, "base_snapshot_id": spec.get("base_snapshot_id"),
            "already_committed": True}


def publish_index(table_uri: str, staged, staging_uri: str, snapshot_id: int) -> None:
    """Publish the run's index changes as the index of the snapshot it committed (once)."""
    if read_manifest(table_uri, snapshot_id) is not None:
        return
    base = read_manifest(table_uri, staged.base_snapshot_id)
    if base is None:
        log.warning("index of base snapshot %s is gone; the next bootstrap rebuilds", staged.base_snapshot_id)
        return
    publish_committed(table_uri, base, staged_shards(staging_uri), snapshot_id)
    clean_up(table_uri)


def _drop_abandoned_staging(staging_uri: str, retention_seconds: float) -> None:
    """Staging of other runs of this table untouched for longer than the retention never committed: drop it
    (its data files are orphans for the orphan-file cleanup)."""
    table_staging = staging_uri.rstrip("/").rsplit("/", 1)[0]
    now = time.time()
    for name in storage.list_dir(table_staging):
        uri = storage.join(table_staging, name)
        marker = storage.join(uri, STAGED_FILE)
        age_from = storage.mtime(marker) if storage.exists(marker) else storage.mtime(uri)
        if now - age_from > retention_seconds:
            log.info("dropping abandoned staging %s", uri)
            storage.delete_dir(uri)
