"""The changes of a Paimon table between two snapshots as an Airflow task (a Spark job), e.g. after a
PaimonSnapshotSensor: ``start_snapshot_id="{{ ti.xcom_pull('wait')['after_snapshot'] | tojson }}"``,
``end_snapshot_id="{{ ti.xcom_pull('wait')['snapshot_id'] }}"``."""
from __future__ import annotations

from collections.abc import Sequence

from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.snapshot.snapshots import parse_cursor
from airflow_paimon.engine.jobs.specs import IncrementalReadSpec
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.operators.spark_job import PaimonSparkJobOperator


class PaimonIncrementalReadOperator(PaimonSparkJobOperator):
    """Write the rows of ``table`` that changed in (``start_snapshot_id``, ``end_snapshot_id``] (start
    exclusive, end inclusive; end defaults to the latest snapshot) as parquet files under ``target`` (a
    directory; ``part-NNNNN.parquet``, one per changed partition), with a ``row_kind_column`` (default
    ``row_kind``). Paimon's ``incremental-between``; ``scan_mode``:

    - ``diff``: the table at the end compared with the table at the start, key by key: ``+I`` new key, ``+U``
      changed key (new values), ``-D`` key gone from its partition (old values); see engine/read/incremental.py.
    - ``changelog``: the changelog files of the snapshots in the range (tables with ``changelog-producer``
      ``input``): every change as written, in commit order, with its row kind; see engine/read/changelog_read.py.
    - ``auto`` (default): ``changelog`` where the table has a changelog producer, else ``diff``.

    The target is a ready source for another table: ``PaimonAssignAndWriteOperator(source=target,
    row_kind_column="row_kind")``. Safe to retry: the same range gives the same files, stale parts are removed.
    ``start_snapshot_id`` may be a snapshot summary (a sensor's ``after_snapshot``, or its JSON text): when the
    table was rolled back below it, the read starts at the snapshot rolled back to (a warning in the task log,
    ``rolled_back_from`` in the result); a bare id is taken as it is.
    Returns ``{"table", "start_snapshot_id", "end_snapshot_id", "target", "row_kind_column",
    "changed_partitions", "files", "rows", "inserts", "updates", "deletes", "update_befores", "scan_mode",
    "rolled_back_from"}``.
    """

    job = "incremental_read"
    template_fields: Sequence[str] = (*PaimonSparkJobOperator.template_fields, "start_snapshot_id",
                                      "end_snapshot_id", "target")

    def __init__(self, *, start_snapshot_id: int | str | dict, target: str, end_snapshot_id: int | str | None = None,
                 row_kind_column: str = "row_kind", scan_mode: str = "auto", **kwargs) -> None:
        super().__init__(**kwargs)
        self.start_snapshot_id, self.end_snapshot_id = start_snapshot_id, end_snapshot_id
        self.target, self.row_kind_column, self.scan_mode = target, row_kind_column, scan_mode

    def job_spec(self, context, hook: PaimonHook) -> IncrementalReadSpec:
        def snapshot_id(name: str, value) -> int | None:
            if value in (None, "", "None"):
                return None
            try:
                return int(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{self.table}: {name} must be a snapshot id, not {value!r}") from None

        if self.start_snapshot_id in (None, "", "None"):
            raise ConfigError(f"{self.table}: start_snapshot_id is required (0 reads the whole table)")
        try:
            start = parse_cursor(self.start_snapshot_id)
        except (TypeError, ValueError, KeyError):
            raise ConfigError(f"{self.table}: start_snapshot_id must be a snapshot id or a snapshot summary, not "
                              f"{self.start_snapshot_id!r}") from None
        if not self.target:
            raise ConfigError(f"{self.table}: target (a directory for the parquet files) is required")
        return IncrementalReadSpec(**self.common_spec(hook), start_snapshot_id=start["snapshot_id"],
                                   start_snapshot=start if start["time_millis"] is not None else None,
                                   end_snapshot_id=snapshot_id("end_snapshot_id", self.end_snapshot_id),
                                   target=self.target, row_kind_column=self.row_kind_column,
                                   scan_mode=self.scan_mode)
