"""Data-aware scheduling on the paimon:// asset, through dag.test() (jobs on Spark Connect): the example writer
DAG's commit records an asset event (with the snapshot in its extra) in the Airflow DB and queues the reader
DAG; the reader, run on that event, reads exactly that snapshot even after a later commit; a compaction that
rewrote files records its COMPACT snapshot, one that had nothing to do records nothing."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_paimon.engine.table.table import get_table
from dag.dagrun import run_dag, use_warehouse
from incremental_oracle import read_at
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.dag, pytest.mark.usefixtures("on_spark_connect")]


def asset_events(uri: str, run) -> list[tuple[str, dict]]:
    """(source task, extra) of every event of the asset ``uri`` the DAG run ``run`` recorded, oldest first."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        events = session.scalars(select(AssetEvent).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
                                 .where(AssetModel.uri == uri, AssetEvent.source_dag_id == run.dag_id,
                                        AssetEvent.source_run_id == run.run_id)
                                 .order_by(AssetEvent.id)).all()
        return [(e.source_task_id, dict(e.extra)) for e in events]


def unpaused(dag_id: str) -> None:
    """Parse the DAG folder into the DB now (dag.test does it only when a run starts) and unpause ``dag_id``:
    Airflow queues runs only for unpaused DAGs scheduled on an asset."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import update

    manager = DagBundlesManager()
    manager.sync_bundles_to_db()
    for bundle in manager.get_all_dag_bundles():
        if not bundle.is_initialized:
            bundle.initialize()
        sync_bag_to_db(BundleDagBag(dag_folder=bundle.path, bundle_path=bundle.path, bundle_name=bundle.name),
                       bundle.name, bundle.version)
    with create_session() as session:
        assert session.execute(update(DagModel).where(DagModel.dag_id == dag_id).values(is_paused=False)).rowcount


def queued(dag_id: str, uri: str) -> bool:
    """Whether an asset-triggered run of ``dag_id`` is queued (AssetDagRunQueue) for the asset ``uri``."""
    from airflow.models.asset import AssetDagRunQueue, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return session.scalar(select(AssetDagRunQueue).join(AssetModel, AssetDagRunQueue.asset_id == AssetModel.id)
                              .where(AssetDagRunQueue.target_dag_id == dag_id, AssetModel.uri == uri)) is not None


def triggered_by_events_of(monkeypatch, uri: str, source) -> None:
    """Make the next dag.test() run consume the asset events the DAG run ``source`` recorded for ``uri``, as the
    scheduler's asset-triggered run does (``dag_run.consumed_asset_events``; dag.test creates manual runs)."""
    import airflow.models.dagrun as dagrun
    from airflow.models.asset import AssetEvent, AssetModel
    from sqlalchemy import select

    create = dagrun.get_or_create_dagrun

    def create_consuming(*, session, **kwargs):
        run = create(session=session, **kwargs)
        run.consumed_asset_events.extend(session.scalars(
            select(AssetEvent).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .where(AssetModel.uri == uri, AssetEvent.source_dag_id == source.dag_id,
                   AssetEvent.source_run_id == source.run_id)))
        session.commit()
        return run

    monkeypatch.setattr(dagrun, "get_or_create_dagrun", create_consuming)


def test_commit_event_triggers_the_reader_which_reads_that_snapshot(airflow_home, warehouse, monkeypatch):
    from paimon_orders_snapshot_reader import ORDERS, dag as reader
    from paimon_upsert_daily import TABLE, TABLE_SCHEMA, dag as writer
    from run_example import demo_batches

    use_warehouse(monkeypatch, warehouse)
    unpaused(reader.dag_id)
    day = "2026-11-05"
    batch = demo_batches([day], rows_per_day=300, seed=5)[0]
    (airflow_home["sources"] / "orders").mkdir(parents=True, exist_ok=True)
    batch.to_parquet(airflow_home["sources"] / "orders" / f"{day}.parquet", index=False)

    written, states, xcoms = run_dag(writer, day)
    assert written.state == "success", states
    assert xcoms["commit"]["snapshot_id"] == 1 and xcoms["compact"]["compacted_buckets"] == 0
    rows = xcoms["assign_and_write"]["rows_written"]
    # the commit's event, none from the compaction: it had nothing to rewrite, there is no new snapshot
    assert asset_events(ORDERS.uri, written) == [("commit", {
        "snapshot_id": 1, "base_snapshot_id": None, "commit_kind": "APPEND", "delta_record_count": rows,
        "total_record_count": rows})]
    assert queued(reader.dag_id, ORDERS.uri)  # the scheduler would start the reader for it

    table = get_table({"warehouse": warehouse}, TABLE)
    from airflow_paimon.engine.table.table import TableSpec

    spec = TableSpec.from_dict(TABLE_SCHEMA)
    later = batch.head(20).assign(status="later")  # a commit landing before the reader runs: not what it reads
    upsert(bootstrap({"warehouse": warehouse}, TABLE, warehouse + "/.index-test", 2),
           pa.Table.from_pandas(later, schema=spec.arrow_schema(), preserve_index=False), run_id="later")
    assert table.snapshot_manager().get_latest_snapshot().id == 2

    triggered_by_events_of(monkeypatch, ORDERS.uri, written)
    run, states, xcoms = run_dag(reader)
    assert run.state == "success", states
    report = xcoms["read_snapshot"]
    at_1 = assert_table_equals(table.copy({"scan.snapshot-id": "1"}), expected_upsert([batch], "order_id"),
                               "order_id")  # pypaimon's read of snapshot 1 is the oracle's table, no key twice
    assert report["snapshot_id"] == 1 and report["rows"] == len(at_1) == rows
    by_status = at_1.groupby("status")["amount"].agg(["count", "sum"])
    assert set(report["per_status"]) == set(by_status.index) and "later" not in report["per_status"]
    for status, agg in by_status.iterrows():
        assert report["per_status"][status]["orders"] == agg["count"]
        assert report["per_status"][status]["amount"] == pytest.approx(agg["sum"])


def test_a_compaction_records_its_compact_snapshot(airflow_home, warehouse, monkeypatch):
    from airflow_paimon.assets import paimon_asset
    from compaction_tables import batches, cross_partition_table
    from paimon_asset_dags import compact_dag

    use_warehouse(monkeypatch, warehouse)
    table, _ = cross_partition_table(warehouse, batches(3, seed=41))  # snapshots 1-3, in-process
    run, states, xcoms = run_dag(compact_dag)
    assert run.state == "success", states
    assert xcoms["compact"]["snapshot_id"] == 4 and xcoms["compact"]["compacted_buckets"] > 0
    snapshot = table.snapshot_manager().get_snapshot_by_id(4)
    assert asset_events(paimon_asset("db.t").uri, run) == [("compact", {
        "snapshot_id": 4, "base_snapshot_id": 3, "commit_kind": "COMPACT",
        "delta_record_count": snapshot.delta_record_count, "total_record_count": snapshot.total_record_count})]
    assert snapshot.total_record_count == len(read_at(table, 4))  # full compaction: one record per live key
