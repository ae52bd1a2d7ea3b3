"""Table maintenance jobs (driver-only: metadata reads and deletes, no Spark work)."""
from __future__ import annotations

import time

from airflow_paimon.engine.maintenance.expire import ExpireOptions, expire_snapshots
from airflow_paimon.engine.maintenance.orphans import DEFAULT_OLDER_THAN_MS, remove_orphan_files
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table import get_table


def run_expire_snapshots(spec: dict) -> dict:
    table = get_table(spec["catalog_options"], spec["table"])
    options = ExpireOptions.of(spec["table"], dict(table.table_schema.options), spec.get("options"))
    return expire_snapshots(table, options, dry_run=bool(spec.get("dry_run")))


def run_remove_orphan_files(spec: dict) -> dict:
    table = get_table(spec["catalog_options"], spec["table"])
    margin_ms = spec.get("older_than_ms")
    margin_ms = DEFAULT_OLDER_THAN_MS if margin_ms is None else int(margin_ms)  # 0 means now, not the default
    if margin_ms < 0:
        raise ValidationError(spec["table"], "older_than_ms must not be negative", value=margin_ms)
    return remove_orphan_files(table, int(time.time() * 1000) - margin_ms, staging_root=spec.get("staging_root"),
                               dry_run=bool(spec.get("dry_run")))
