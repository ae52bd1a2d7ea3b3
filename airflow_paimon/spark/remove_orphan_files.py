"""Spark job: remove_orphan_files (driver-only: metadata reads and deletes, no Spark work)."""
from __future__ import annotations

import time

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.maintenance.orphans import DEFAULT_OLDER_THAN_MS, remove_orphan_files
from airflow_paimon.engine.jobs.specs import MIN_ORPHAN_AGE_MS, OrphansResult, OrphansSpec
from airflow_paimon.engine.table.table import get_table


def run_remove_orphan_files(spec: OrphansSpec) -> OrphansResult:
    margin_ms = DEFAULT_OLDER_THAN_MS if spec.older_than_ms is None else int(spec.older_than_ms)
    if margin_ms < MIN_ORPHAN_AGE_MS:  # younger files may belong to a commit in flight
        raise ValidationError(spec.table, f"older_than_ms must be at least {MIN_ORPHAN_AGE_MS} (one hour): younger "
                              "files may belong to a write, compaction or commit in flight", value=margin_ms)
    table = get_table(spec.catalog_options, spec.table)
    return remove_orphan_files(table, int(time.time() * 1000) - margin_ms, staging_root=spec.staging_root,
                               dry_run=spec.dry_run)
