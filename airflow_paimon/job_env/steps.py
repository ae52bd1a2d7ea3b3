"""The job side's steps the operators and the hook run without Spark: each takes and returns JSON values, so it
runs the same in the task's process (one environment holding both sides) or in the job environment
(job_env/step.py). Imports the engine (pypaimon) only inside the steps: Airflow's side imports this module to
name them."""
from __future__ import annotations

from airflow_paimon.job_env.step import job_step


@job_step
def bootstrap_decide(spec: dict) -> dict | None:
    """The bootstrap result when table metadata decides it (an index to reuse, a table that needs none)."""
    from airflow_paimon.engine.runs.bootstrap_index import bootstrap_index
    from airflow_paimon.engine.jobs.specs import BootstrapSpec

    result = bootstrap_index(BootstrapSpec.from_dict(spec), None)
    return None if result is None else result.to_dict()


@job_step
def compact_decide(spec: dict) -> dict | None:
    """The compaction result when nothing is due, or this run's compaction is committed already."""
    from airflow_paimon.engine.runs.compact import decide_compaction
    from airflow_paimon.engine.jobs.specs import CompactSpec

    result = decide_compaction(CompactSpec.from_dict(spec))
    return None if result is None else result.to_dict()


@job_step
def compact_writes(catalog_options: dict, table: str, snapshot_id: int | None, count_writes: bool) -> dict:
    """The snapshot a compaction starts from (``snapshot_id``, else the latest) and, when ``count_writes``, how
    many write snapshots came since the last compaction."""
    from airflow_paimon.engine.compact.plan import write_commits, writes_since_compaction
    from airflow_paimon.engine.files.scan import latest_snapshot
    from airflow_paimon.engine.table.table import get_table

    paimon_table = get_table(catalog_options, table)
    if snapshot_id is None:
        latest = latest_snapshot(paimon_table)
        snapshot_id = latest.id if latest else None
    writes = write_commits(writes_since_compaction(paimon_table, snapshot_id)) if count_writes else None
    return {"snapshot_id": snapshot_id, "writes": writes}


@job_step
def create_table(catalog_options: dict, table: str, table_schema: dict) -> dict:
    from airflow_paimon.engine.table.lifecycle import create_table as create
    from airflow_paimon.engine.table.table import TableSpec

    return create(catalog_options, table, TableSpec.from_dict(table_schema))


@job_step
def alter_table(catalog_options: dict, table: str, set_options: dict, reset_options: list, add_columns: list,
                widen_columns: list) -> dict:
    from airflow_paimon.engine.table.lifecycle import alter_table as alter

    return alter(catalog_options, table, set_options, reset_options, add_columns, widen_columns)


@job_step
def create_tag(catalog_options: dict, table: str, tag: str, snapshot_id: int | None,
               fingerprint: str | None = None) -> dict:
    """``fingerprint``: of the snapshot the run committed, so a snapshot that took its id after a rollback is
    refused."""
    from airflow_paimon.engine.table.lifecycle import create_tag as tag_it

    return tag_it(catalog_options, table, tag, snapshot_id, fingerprint)


@job_step
def rollback(catalog_options: dict, table: str, index_root: str, to_snapshot: int | None,
             to_tag: str | None) -> dict:
    from airflow_paimon.engine.maintenance.rollback import rollback as roll_back

    return roll_back(catalog_options, table, index_root, to_snapshot, to_tag)


@job_step
def expire_partitions(catalog_options: dict, table: str, dag_id: str, run_id: str, now: str,
                      expiration_time: str | None, dry_run: bool) -> dict:
    """``now``: an ISO timestamp without zone (UTC)."""
    import datetime

    from airflow_paimon.engine.commit.identity import CommitIdentity
    from airflow_paimon.engine.maintenance.partition_expiry import expire_partitions as expire
    from airflow_paimon.engine.options.parse import duration_ms

    expiration = None
    if expiration_time is not None and str(expiration_time).strip():
        expiration = duration_ms(table, "expiration_time", str(expiration_time))
    identity = CommitIdentity.for_run(dag_id, run_id, table + ":expire-partitions")
    return expire(catalog_options, table, identity, datetime.datetime.fromisoformat(now), expiration, dry_run)


@job_step
def list_databases(catalog_options: dict) -> list[str]:
    """The connection test: the warehouse's databases; a warehouse that does not exist is a failure (creating
    one is PaimonCreateTableOperator's job, not a test's)."""
    from airflow_paimon.engine.table.catalog import open_catalog, require_warehouse

    require_warehouse(catalog_options)
    return list(open_catalog(catalog_options).list_databases())


@job_step
def connect_job(job: str, spec: dict, result_uri: str, remote: str, conf: dict) -> bool:
    """A job as a Spark Connect client (spark/backends.py ConnectBackend), its result in ``result_uri``;
    SIGTERM (the task's on_kill) interrupts its sessions' work on the server, as JobRun.kill does in-process."""
    from airflow_paimon.spark.backends import connect_job as run_connect_job

    return run_connect_job(job, spec, result_uri, remote, conf)
