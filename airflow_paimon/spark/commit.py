"""commit: the staged messages of one DAG run become one snapshot, exactly once. Driver-only: no Spark work."""
from __future__ import annotations

import logging

from airflow_paimon.engine.commit.committer import commit_once
from airflow_paimon.engine.commit.staging import load
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.index.store import clean_up, publish_committed, staged_shards
from airflow_paimon.engine.table import get_table

log = logging.getLogger(__name__)


def run_commit(spec: dict) -> dict:
    identifier = spec["table"]
    table = get_table(spec["catalog_options"], identifier)
    staged = load(table, spec["staging_uri"])
    snapshot_id, already = commit_once(table, staged.messages, staged.commit_user, staged.commit_identifier,
                                       staged.base_snapshot_id)
    log.info("%s: snapshot %s (already committed: %s)", identifier, snapshot_id, already)
    if snapshot_id is not None and snapshot_id != staged.base_snapshot_id:
        # also on a retry that finds the commit done: the index of the new snapshot may not be out yet
        publish_index(staged.extra["index_uri"], staged, spec["staging_uri"], snapshot_id)
    return {"table": identifier, "snapshot_id": snapshot_id, "base_snapshot_id": staged.base_snapshot_id,
            "already_committed": already}


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
