"""Spark job: expire_snapshots (driver-only: metadata reads and deletes, no Spark work)."""
from __future__ import annotations

from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.jobs.specs import ExpireResult, ExpireSpec
from airflow_paimon.engine.table.table import get_table


def run_expire_snapshots(spec: ExpireSpec) -> ExpireResult:
    table = get_table(spec.catalog_options, spec.table)
    options = TableOptions.parse(spec.table, dict(table.table_schema.options)).with_overrides(spec.options).expire
    return expire_snapshots(table, options, dry_run=spec.dry_run)
