"""Runs whenever ``demo.orders`` has a new snapshot: data-aware scheduling on the table's ``paimon://`` asset.

``paimon_upsert_daily``'s commit (and its compaction, when that rewrote files) emits an asset event for the
table with ``extra`` = {snapshot_id, base_snapshot_id, commit_kind, delta_record_count, total_record_count}.
This DAG takes the newest snapshot of the events that triggered it and reads the table *at that snapshot*
(Paimon time travel, ``scan.snapshot-id``), so a later commit landing meanwhile does not change what it sees:
here a small report, order count and amount per status. For the changed rows only, chain
``PaimonIncrementalReadOperator(start_snapshot_id=<base_snapshot_id>, end_snapshot_id=<snapshot_id>)``.
"""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG, task
from airflow.sdk.exceptions import AirflowSkipException

from airflow_paimon.assets import paimon_asset

TABLE = "demo.orders"  # paimon_upsert_daily's table
ORDERS = paimon_asset(TABLE)  # paimon://paimon_default/demo/orders

with DAG(
    dag_id="paimon_orders_snapshot_reader",
    schedule=[ORDERS],
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    tags=["paimon", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def new_snapshot(triggering_asset_events=None) -> dict:
        """The extra of the newest snapshot among the triggering events (a commit and its compaction can
        arrive together: the COMPACT snapshot holds the same rows, read the newest)."""
        events = list(triggering_asset_events[ORDERS]) if triggering_asset_events else []
        if not events:
            raise AirflowSkipException(f"no asset event of {ORDERS.uri}: this DAG reads the snapshot a commit "
                                       "announced; trigger it through the asset, not by hand")
        return dict(max(events, key=lambda event: event.extra["snapshot_id"]).extra)

    @task
    def read_snapshot(event: dict) -> dict:
        """Order count and amount per status of the table at the announced snapshot."""
        import pyarrow as pa

        from airflow_paimon.hooks.paimon import PaimonHook

        table = PaimonHook().get_table(TABLE).copy({"scan.snapshot-id": str(event["snapshot_id"])})
        builder = table.new_read_builder().with_projection(["status", "amount"])
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        if rows is None:  # pypaimon reads an empty snapshot as None
            rows = pa.table({"status": pa.array([], pa.string()), "amount": pa.array([], pa.float64())})
        per_status = rows.group_by("status").aggregate([("amount", "sum"), ("status", "count")])
        return {**event, "rows": rows.num_rows,
                "per_status": {s: {"orders": n, "amount": a} for s, n, a in zip(
                    per_status["status"].to_pylist(), per_status["status_count"].to_pylist(),
                    per_status["amount_sum"].to_pylist())}}

    read_snapshot(new_snapshot())
