"""PaimonSnapshotSensor: wait until a Paimon table has a snapshot newer than a given id (FLIP-27-style
discovery: the sensor discovers, a downstream task reads the increment, e.g. PaimonIncrementalReadOperator)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.configuration import conf
from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.snapshot.snapshots import (check_commit_kinds, cursor_at, found_after, latest_snapshot_id,
                                             newer_snapshot, parse_cursor, resume_point, rollback_note)
from airflow_paimon.hooks.paimon import PaimonHook

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from airflow_paimon.table_files import TableFiles


class PaimonSnapshotSensor(BaseSensorOperator):
    """Succeeds when ``table`` has a snapshot with id > ``after_snapshot_id`` (of a kind in ``commit_kinds``,
    e.g. ``["APPEND", "OVERWRITE"]`` to ignore compactions). Returns (XCom) the newest such snapshot:
    ``{"table", "snapshot_id", "commit_kind", "commit_user", "commit_identifier", "time_millis",
    "delta_record_count", "total_record_count", "after_snapshot_id", "after_snapshot", "rolled_back_from"}``.

    ``after_snapshot_id`` (templated) None means the table's latest snapshot when the task starts (0 for an
    empty table): "wait for the next commit". It may also be a snapshot summary (an earlier run's XCom, or its
    JSON text): its identity then tells the snapshot from a later one that reuses its id after a rollback.
    ``deferrable=True`` frees the worker slot: the triggerer polls the snapshot directory every
    ``poke_interval`` seconds through PaimonSnapshotTrigger, without Spark.

    A table rolled back below the cursor (engine/snapshot/snapshots.py resume_point) moves the cursor down to the
    snapshot it was rolled back to, with a warning in the task log; the XCom then has that snapshot as
    ``after_snapshot_id`` / ``after_snapshot`` (where an incremental read starts) and the old cursor's id as
    ``rolled_back_from``.
    """

    template_fields: Sequence[str] = ("table", "after_snapshot_id", "commit_kinds")
    ui_color = "#c9e7f5"

    def __init__(self, *, table: str, after_snapshot_id: int | str | dict | None = None,
                 commit_kinds: list[str] | str | None = None, paimon_conn_id: str = PaimonHook.default_conn_name,
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
                 **kwargs) -> None:
        super().__init__(**kwargs)
        if "{{" not in table:
            validate_identifier(table)
        if not (isinstance(commit_kinds, str) and "{{" in commit_kinds):
            check_commit_kinds(commit_kinds)
        if after_snapshot_id is None and self.reschedule:
            raise ConfigError(f"{self.task_id}: mode='reschedule' needs an explicit after_snapshot_id (each "
                              "reschedule would otherwise wait for a snapshot newer than the latest again)")
        self.table, self.after_snapshot_id, self.commit_kinds = table, after_snapshot_id, commit_kinds
        self.paimon_conn_id, self.deferrable = paimon_conn_id, deferrable
        self._cursor: dict | None = None
        self._rolled_back_from: int | None = None

    def _table(self):
        return PaimonHook(self.paimon_conn_id).table_files(self.table)  # JSON files: no pypaimon here

    def _resolve_after(self, table: TableFiles | FileStoreTable) -> dict:
        """The cursor: as given, or the latest snapshot; a bare id gets the identity of the snapshot it names
        now, so that a rollback while this task waits is seen."""
        if self._cursor is None:
            given = self.after_snapshot_id
            try:
                cursor = parse_cursor(latest_snapshot_id(table) if given in (None, "", "None") else given)
            except (TypeError, ValueError, KeyError) as e:
                raise ConfigError(f"{self.table}: after_snapshot_id must be a snapshot id >= 0 or a snapshot "
                                  f"summary, not {given!r} ({e})") from None
            self._cursor = cursor if cursor["time_millis"] is not None else cursor_at(table, cursor["snapshot_id"])
        return self._cursor

    def _follow_rollback(self, table: TableFiles | FileStoreTable) -> dict:
        cursor, rolled_from = resume_point(table, self._resolve_after(table))
        if rolled_from is not None:
            self.log.warning("%s", rollback_note(self.table, rolled_from, cursor))
            self._cursor, self._rolled_back_from = cursor, rolled_from
        return cursor

    def poke(self, context) -> PokeReturnValue:
        from airflow_paimon.operators.spark_job import retried_by_flag

        with retried_by_flag(f"waiting for a snapshot of {self.table}"):  # a ConfigError fails at once
            return self._poke()

    def _poke(self) -> PokeReturnValue:
        table = self._table()
        cursor = self._follow_rollback(table)
        found, _ = newer_snapshot(table, self.table, cursor["snapshot_id"], check_commit_kinds(self.commit_kinds))
        return PokeReturnValue(found is not None,
                               found_after(found, cursor, self._rolled_back_from) if found else None)

    def execute(self, context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)  # already there: no trip through the triggerer
        if first.is_done:
            return first.xcom_value
        from airflow_paimon.triggers.paimon import PaimonSnapshotTrigger

        kinds = check_commit_kinds(self.commit_kinds)
        cursor = self._cursor
        assert cursor is not None  # the poke above resolved it
        self.defer(trigger=PaimonSnapshotTrigger(table=self.table, after_snapshot_id=cursor["snapshot_id"],
                                                 after_snapshot=cursor, rolled_back_from=self._rolled_back_from,
                                                 commit_kinds=list(kinds) if kinds else None,
                                                 paimon_conn_id=self.paimon_conn_id,
                                                 poll_interval=self.poke_interval),
                   method_name="execute_complete", timeout=self.timeout)

    def execute_complete(self, context, event: dict) -> dict:
        if event.get("status") != "success":
            message = f"waiting for a snapshot of {self.table}: {event.get('message', event)}"
            if event.get("retryable") is False:  # the trigger's error said a retry cannot help
                raise AirflowFailException(message)
            raise AirflowException(message)
        return event["snapshot"]
