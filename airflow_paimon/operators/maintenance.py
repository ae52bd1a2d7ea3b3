"""Table maintenance as Airflow tasks: snapshot expiry and orphan-file removal (driver-only Spark jobs)."""
from __future__ import annotations

from datetime import timedelta

from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.jobs.specs import MIN_ORPHAN_AGE_MS, ExpireSpec, OrphansSpec
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.operators.spark_job import PaimonSparkJobOperator

MIN_OLDER_THAN = timedelta(milliseconds=MIN_ORPHAN_AGE_MS)


class PaimonExpireSnapshotsOperator(PaimonSparkJobOperator):
    """Expire old snapshots and delete the files only they needed, as Paimon does: keep at least
    ``snapshot.num-retained.min`` and every snapshot younger than ``snapshot.time-retained``, never more than
    ``snapshot.num-retained.max``, at most ``snapshot.expire.limit`` per run. The table's options apply; the
    arguments override them for this task. Files a retained snapshot or a tag needs are never deleted.

    Returns ``{"table", "expired_snapshots", "deleted_data_files", "deleted_metadata_files",
    "earliest_snapshot_id", "dry_run"}``.
    """

    job = "expire_snapshots"

    def __init__(self, *, retain_min: int | None = None, retain_max: int | None = None,
                 time_retained: str | timedelta | None = None, expire_limit: int | None = None,
                 dry_run: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        if isinstance(time_retained, timedelta):
            time_retained = f"{int(time_retained.total_seconds() * 1000)} ms"
        self.options = {"snapshot.num-retained.min": retain_min, "snapshot.num-retained.max": retain_max,
                        "snapshot.time-retained": time_retained, "snapshot.expire.limit": expire_limit}
        self.dry_run_only = dry_run  # not self.dry_run: that is BaseOperator's dry_run() method

    def job_spec(self, context, hook: PaimonHook) -> ExpireSpec:
        return ExpireSpec(**self.common_spec(hook), options={k: v for k, v in self.options.items() if v is not None},
                          dry_run=self.dry_run_only)


class PaimonRemoveOrphanFilesOperator(PaimonSparkJobOperator):
    """Delete files in the table directory that no snapshot or tag references and that are older than
    ``older_than``, plus staged commits of runs that never finished. Use ``dry_run=True`` to only report.

    ``older_than`` (default one day) must exceed the longest write or compaction of the table: their files
    exist before the commit that references them. It is at least one hour: a commit writes its manifests
    moments before its snapshot, and a younger margin could delete them in between. Data files of a staged
    run are kept whatever their age until it commits or is abandoned.

    Returns ``{"table", "orphan_files", "orphan_bytes", "stale_staging_dirs", "dry_run", "sample"}``.
    """

    job = "remove_orphan_files"

    def __init__(self, *, older_than: timedelta = timedelta(days=1), dry_run: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        if not isinstance(older_than, timedelta) or older_than < MIN_OLDER_THAN:
            raise ConfigError(f"table {kwargs.get('table')}: older_than must be a timedelta of at least 1 hour "
                              f"(younger files may belong to a commit in flight), got {older_than!r}")
        self.older_than = older_than
        self.dry_run_only = dry_run  # not self.dry_run: that is BaseOperator's dry_run() method

    def job_spec(self, context, hook: PaimonHook) -> OrphansSpec:
        return OrphansSpec(**self.common_spec(hook), older_than_ms=int(self.older_than.total_seconds() * 1000),
                           staging_root=hook.staging_root(), dry_run=self.dry_run_only)
