"""PaimonSnapshotTrigger: the triggerer polls a table's snapshot directory (no Spark) until a newer snapshot lands."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from airflow_paimon.table_files import TableFiles


class PaimonSnapshotTrigger(BaseTrigger):
    """Fires once a snapshot with id > ``after_snapshot_id`` (and, if given, of a kind in ``commit_kinds``)
    exists. Event: ``{"status": "success", "snapshot": {...snapshot_summary...}}`` or ``{"status": "error",
    "message": ...}``. Carries only the connection id: credentials are read in the triggerer, never serialised.
    ``after_snapshot``: the cursor with its snapshot's identity (engine/snapshot/snapshots.py), so that a rollback below
    it while the trigger waits moves it down (logged) instead of skipping the commits that reuse its ids."""

    def __init__(self, *, table: str, after_snapshot_id: int, commit_kinds: list[str] | None = None,
                 paimon_conn_id: str = "paimon_default", poll_interval: float = 30.0,
                 after_snapshot: dict | None = None, rolled_back_from: int | None = None) -> None:
        super().__init__()
        self.table, self.after_snapshot_id = table, int(after_snapshot_id)
        self.commit_kinds = list(commit_kinds) if commit_kinds else None
        self.paimon_conn_id, self.poll_interval = paimon_conn_id, float(poll_interval)
        self.after_snapshot, self.rolled_back_from = after_snapshot, rolled_back_from

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "after_snapshot_id": self.after_snapshot_id, "commit_kinds": self.commit_kinds,
                 "paimon_conn_id": self.paimon_conn_id, "poll_interval": self.poll_interval,
                 "after_snapshot": self.after_snapshot, "rolled_back_from": self.rolled_back_from})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_paimon.engine.snapshot.snapshots import check_commit_kinds, cursor_at, parse_cursor
        from airflow_paimon.hooks.paimon import PaimonHook
        from airflow_paimon.table_files import TableFiles

        try:
            kinds = check_commit_kinds(self.commit_kinds)
            options = await PaimonHook(self.paimon_conn_id).acatalog_options()
            # file IO is blocking: every read runs in a worker thread, the triggerer's loop stays free
            table = await asyncio.to_thread(TableFiles, options, self.table)  # JSON files: no pypaimon here
            given = self.after_snapshot or await asyncio.to_thread(cursor_at, table, self.after_snapshot_id)
            cursor = scanned = parse_cursor(given)
            while True:
                found, cursor, scanned = await asyncio.to_thread(self._poll, table, kinds, cursor, scanned)
                if found is not None:
                    yield TriggerEvent({"status": "success", "snapshot": found})
                    return
                self.log.info("%s: no snapshot newer than %d%s yet; next look in %.0f s", self.table,
                              scanned["snapshot_id"], f" of kind {kinds}" if kinds else "", self.poll_interval)
                await asyncio.sleep(self.poll_interval)
        except Exception as e:  # noqa: BLE001 - reported to the task, which fails with the message
            from airflow_paimon.engine.errors import is_retryable

            yield TriggerEvent({"status": "error", "message": f"{self.table}: {type(e).__name__}: {e}",
                                "retryable": is_retryable(e)})

    def _poll(self, table: TableFiles | FileStoreTable, kinds, cursor: dict, scanned: dict) -> tuple[dict | None, dict,
              dict]:
        """(the event's snapshot or None, the cursor, the snapshot scanned up to): both followed down through a
        rollback — the scanned one too, which may lie above the cursor with a kind filter."""
        from airflow_paimon.engine.snapshot.snapshots import (cursor_at, found_after, newer_snapshot, resume_point,
                                                     rollback_note)

        resumed, rolled_from = resume_point(table, cursor)
        if rolled_from is not None:
            self.log.warning("%s", rollback_note(self.table, rolled_from, resumed))
            cursor = scanned = resumed
            self.rolled_back_from = rolled_from
        else:
            scanned, _ = resume_point(table, scanned)
        found, upto = newer_snapshot(table, self.table, scanned["snapshot_id"], kinds)
        if found is not None:
            return found_after(found, cursor, self.rolled_back_from), cursor, scanned
        return None, cursor, cursor_at(table, upto) if upto != scanned["snapshot_id"] else scanned
