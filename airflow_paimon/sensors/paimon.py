"""PaimonSnapshotSensor: wait until a Paimon table has a snapshot newer than a given id (FLIP-27-style
discovery: the sensor discovers, a downstream task reads the increment, e.g. PaimonIncrementalReadOperator)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.snapshots import check_commit_kinds, latest_snapshot_id, newer_snapshot
from airflow_paimon.hooks.paimon import PaimonHook


class PaimonSnapshotSensor(BaseSensorOperator):
    """Succeeds when ``table`` has a snapshot with id > ``after_snapshot_id`` (of a kind in ``commit_kinds``,
    e.g. ``["APPEND", "OVERWRITE"]`` to ignore compactions). Returns (XCom) the newest such snapshot:
    ``{"table", "snapshot_id", "commit_kind", "commit_user", "commit_identifier", "time_millis",
    "delta_record_count", "total_record_count", "after_snapshot_id"}``.

    ``after_snapshot_id`` (templated) None means the table's latest snapshot when the task starts (0 for an
    empty table): "wait for the next commit". ``deferrable=True`` frees the worker slot: the triggerer polls the
    snapshot directory every ``poke_interval`` seconds through PaimonSnapshotTrigger, without Spark.
    """

    template_fields: Sequence[str] = ("table", "after_snapshot_id", "commit_kinds")
    ui_color = "#c9e7f5"

    def __init__(self, *, table: str, after_snapshot_id: int | str | None = None,
                 commit_kinds: list[str] | str | None = None, paimon_conn_id: str = PaimonHook.default_conn_name,
                 deferrable: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        if "{{" not in table:
            validate_identifier(table)
        if not (isinstance(commit_kinds, str) and "{{" in commit_kinds):
            check_commit_kinds(commit_kinds)
        if after_snapshot_id is None and self.reschedule:
            raise ValueError(f"{self.task_id}: mode='reschedule' needs an explicit after_snapshot_id (each "
                             "reschedule would otherwise wait for a snapshot newer than the latest again)")
        self.table, self.after_snapshot_id, self.commit_kinds = table, after_snapshot_id, commit_kinds
        self.paimon_conn_id, self.deferrable = paimon_conn_id, deferrable
        self._after: int | None = None

    def _table(self):
        return PaimonHook(self.paimon_conn_id).table_files(self.table)  # JSON files: no pypaimon here

    def _resolve_after(self) -> int:
        if self._after is None:
            given = self.after_snapshot_id
            self._after = latest_snapshot_id(self._table()) if given in (None, "", "None") else int(given)
            if self._after < 0:
                raise ValueError(f"{self.table}: after_snapshot_id must be >= 0, not {self._after}")
        return self._after

    def poke(self, context) -> PokeReturnValue:
        after = self._resolve_after()
        found, _ = newer_snapshot(self._table(), self.table, after, check_commit_kinds(self.commit_kinds))
        return PokeReturnValue(found is not None, {**found, "after_snapshot_id": after} if found else None)

    def execute(self, context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)  # already there: no trip through the triggerer
        if first.is_done:
            return first.xcom_value
        from airflow_paimon.triggers.paimon import PaimonSnapshotTrigger

        kinds = check_commit_kinds(self.commit_kinds)
        self.defer(trigger=PaimonSnapshotTrigger(table=self.table, after_snapshot_id=self._after,
                                                 commit_kinds=list(kinds) if kinds else None,
                                                 paimon_conn_id=self.paimon_conn_id,
                                                 poll_interval=self.poke_interval),
                   method_name="execute_complete", timeout=self.timeout)

    def execute_complete(self, context, event: dict) -> dict:
        if event.get("status") != "success":
            raise RuntimeError(f"waiting for a snapshot of {self.table}: {event.get('message', event)}")
        return event["snapshot"]
