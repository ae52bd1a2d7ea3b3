"""commit: the staged messages of one DAG run become one snapshot, exactly once. Driver-only: no Spark work."""
from __future__ import annotations

import logging

from airflow_paimon.engine.commit.committer import commit_once
from airflow_paimon.engine.commit.staging import load
from airflow_paimon.engine.table import get_table

log = logging.getLogger(__name__)


def run_commit(spec: dict) -> dict:
    identifier = spec["table"]
    table = get_table(spec["catalog_options"], identifier)
    staged = load(table, spec["staging_uri"])
    snapshot_id, already = commit_once(table, staged.messages, staged.commit_user, staged.commit_identifier,
                                       staged.base_snapshot_id)
    log.info("%s: snapshot %s (already committed: %s)", identifier, snapshot_id, already)
    return {"table": identifier, "snapshot_id": snapshot_id, "base_snapshot_id": staged.base_snapshot_id,
            "already_committed": already}
