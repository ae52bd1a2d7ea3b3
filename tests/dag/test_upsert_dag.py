"""End to end: the example DAGs through dag.test(), Spark jobs through spark-submit, read back with pypaimon."""
from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from dag.dagrun import job_errors, run_dag, use_warehouse
from java_paimon import assert_java_reads_as_pypaimon, missing
from oracle import assert_table_equals, expected_upsert

pytestmark = pytest.mark.dag


def test_daily_dag_three_batches_match_oracle(airflow_home, warehouse, monkeypatch):
    from paimon_upsert_daily import TABLE, dag
    from run_example import demo_batches

    use_warehouse(monkeypatch, warehouse)
    days = ["2026-11-01", "2026-11-02", "2026-11-03"]
    batches = demo_batches(days, rows_per_day=400, seed=11)
    source_root = airflow_home["sources"] / "orders"
    source_root.mkdir(parents=True, exist_ok=True)
    moved = 0
    for i, (day, batch) in enumerate(zip(days, batches)):
        batch.to_parquet(source_root / f"{day}.parquet", index=False)
        if i:
            before = expected_upsert(batches[:i], "order_id").set_index("order_id")["dt"]
            now = batch.set_index("order_id")["dt"]
            common = now.index.intersection(before.index)
            moved = int((before[common] != now[common]).sum())
            assert moved > 0 and len(common) > moved  # the batch really mixes moves and in-place updates
        run, states, xcoms = run_dag(dag, day)
        assert run.state == "success", states
        assert xcoms["commit"]["snapshot_id"] == i + 1 and not xcoms["commit"]["already_committed"]
        assert xcoms["bootstrap_index"]["base_snapshot_id"] == (i or None)
        # day 1 writes the empty table's index (no keys), later days reuse it: decided from metadata, no Spark
        assert (xcoms["bootstrap_index"]["decided_by"], xcoms["bootstrap_index"]["index_decision"]) == (
            ("metadata", "rebuilt") if i == 0 else ("metadata", "reused"))
        # compaction starts Spark only when it has buckets to rewrite
        compacted = xcoms["compact"]
        assert compacted["decided_by"] == ("spark" if compacted["compacted_buckets"] else "metadata"), compacted
        assert xcoms["assign_and_write"]["moved_keys"] == moved
        assert xcoms["assign_and_write"]["rows_in"] == len(batch)
        assert_table_equals(get_table({"warehouse": warehouse}, TABLE), expected_upsert(batches[: i + 1], "order_id"),
                            "order_id")
    if missing() is None:  # Java Paimon, the reference implementation, reads what the Spark jobs wrote
        assert len(assert_java_reads_as_pypaimon(warehouse, TABLE, ["order_id"])) == len(
            expected_upsert(batches, "order_id"))


@pytest.mark.usefixtures("on_spark_connect")
def test_commit_twice_in_one_run_gives_one_snapshot(airflow_home, warehouse, monkeypatch, tmp_path):
    use_warehouse(monkeypatch, warehouse)
    source = tmp_path / "batch.parquet"
    pd.DataFrame({"id": [1, 2, 3], "dt": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]}).to_parquet(source, index=False)
    from paimon_test_dags import commit_twice

    run, states, xcoms = run_dag(commit_twice, conf={"source": str(source)})
    assert run.state == "success", states
    assert xcoms["commit"] == {**xcoms["commit1"], "already_committed": False}
    assert xcoms["commit1"]["already_committed"] is True
    assert [s.id for s in get_table({"warehouse": warehouse}, "db.t").snapshot_manager().list_snapshots()] == [1]


@pytest.mark.usefixtures("on_spark_connect")
def test_backfill_dag_continues_a_table_written_by_pypaimon_rust(airflow_home, warehouse, monkeypatch, tmp_path):
    from paimon_backfill import dag

    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    from paimon_test_dags import SPEC

    spec = TableSpec.from_dict({**SPEC, "options": {**SPEC["options"], "write.native.enabled": "true"}})
    table = get_or_create_table(opts, "db.native", spec)
    first = pd.DataFrame({"id": [1, 2, 3, 4, 5], "dt": list("aabbc"), "v": [1.0, 2, 3, 4, 5]})
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(pa.Table.from_pandas(first, schema=spec.arrow_schema(), preserve_index=False))
    builder.new_commit().commit(write.prepare_commit())
    write.close()

    second = pd.DataFrame({"id": [1, 3, 5, 6], "dt": list("bbac"), "v": [10.0, 30, 50, 60]})
    csv = tmp_path / "second.csv"
    second.to_csv(csv, index=False)
    run, states, xcoms = run_dag(dag, conf={"source_path": str(csv), "table": "db.native", "source_format": "csv"})
    assert run.state == "success", states
    assert xcoms["assign_and_write"]["moved_keys"] == 2
    assert_table_equals(get_table(opts, "db.native"), expected_upsert([first, second], "id"), "id")


@pytest.mark.usefixtures("on_spark_connect")
def test_bad_input_fails_the_task_and_leaves_the_table(airflow_home, warehouse, monkeypatch, tmp_path):
    use_warehouse(monkeypatch, warehouse)
    from compaction_tables import cross_partition_table
    from paimon_test_dags import bad_input

    # the table as a run left it, written in-process (the write path through the DAG is tested above)
    cross_partition_table(warehouse, [pd.DataFrame({"id": [1, 2], "dt": ["a", "b"], "v": [1.0, 2.0]})])
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": 3, "dt": "a", "v": 3.0}\n{"id": null, "dt": "b", "v": 4.0}\n')
    run, states, _ = run_dag(bad_input, conf={"source": str(bad)})
    assert run.state == "failed" and states["assign_and_write"] == "failed" and states["commit"] != "success"
    errors = job_errors(warehouse, "test_bad_input")
    assert any("table db.t" in e and "'id'" in e and "null" in e for e in errors), errors
    table = get_table({"warehouse": warehouse}, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]
    assert not os.path.exists(layout.staging_dir(layout.default_root(warehouse, "staging"), "db.t")) or all(
        "bad_input" not in p for p in os.listdir(layout.staging_dir(layout.default_root(warehouse, "staging"), "db.t")))
