"""PaimonSnapshotTrigger: the triggerer polls a table's snapshot directory (no Spark) until a newer snapshot lands."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


class PaimonSnapshotTrigger(BaseTrigger):
    """Fires once a snapshot with id > ``after_snapshot_id`` (and, if given, of a kind in ``commit_kinds``)
    exists. Event: ``{"status": "success", "snapshot": {...snapshot_summary...}}`` or ``{"status": "error",
    "message": ...}``. Carries only the connection id: credentials are read in the triggerer, never serialised."""

    def __init__(self, *, table: str, after_snapshot_id: int, commit_kinds: list[str] | None = None,
                 paimon_conn_id: str = "paimon_default", poll_interval: float = 30.0) -> None:
        super().__init__()
        self.table, self.after_snapshot_id = table, int(after_snapshot_id)
        self.commit_kinds = list(commit_kinds) if commit_kinds else None
        self.paimon_conn_id, self.poll_interval = paimon_conn_id, float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "after_snapshot_id": self.after_snapshot_id, "commit_kinds": self.commit_kinds,
                 "paimon_conn_id": self.paimon_conn_id, "poll_interval": self.poll_interval})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_paimon.engine.snapshots import check_commit_kinds, newer_snapshot
        from airflow_paimon.hooks.paimon import PaimonHook
        from airflow_paimon.table_files import TableFiles

        try:
            kinds = check_commit_kinds(self.commit_kinds)
            options = await PaimonHook(self.paimon_conn_id).acatalog_options()
            # file IO is blocking: every read runs in a worker thread, the triggerer's loop stays free
            table = await asyncio.to_thread(TableFiles, options, self.table)
            cursor = self.after_snapshot_id
            while True:
                found, cursor = await asyncio.to_thread(newer_snapshot, table, self.table, cursor, kinds)
                if found is not None:
                    yield TriggerEvent({"status": "success",
                                        "snapshot": {**found, "after_snapshot_id": self.after_snapshot_id}})
                    return
                self.log.info("%s: no snapshot newer than %d%s yet; next look in %.0f s", self.table, cursor,
                              f" of kind {kinds}" if kinds else "", self.poll_interval)
                await asyncio.sleep(self.poll_interval)
        except Exception as e:  # reported to the task, which fails with the message
            yield TriggerEvent({"status": "error", "message": f"{self.table}: {type(e).__name__}: {e}"})
