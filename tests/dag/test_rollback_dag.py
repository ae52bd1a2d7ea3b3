"""Rollbacks through the real operators (spark-submit jobs, dag.test on SQLite): a DAG run's table is rolled back
by PaimonRollbackOperator between its assign-and-write and its commit, and other writers take the rolled-back
snapshot ids again before the commit runs. By default the commit writes the run's batch again against the table as
it is now and lands it once; with ``max_rewrites=0`` it is refused without retries, nothing of the run lands, its
re-run lands once; pypaimon and Java Paimon read the pandas oracle's table, no key twice. A rollback to the APPEND
half of a deletion-vector write is refused by the operator."""
from __future__ import annotations

import pandas as pd
import pytest

from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from dag.dagrun import run_dag, use_warehouse
from java_paimon import assert_java_reads_as_pypaimon, missing
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

pytestmark = pytest.mark.dag

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
OPTIONS = {"plain": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"},
           "deletion-vectors": {"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                                "deletion-vectors.enabled": "true"}}
SEED = [pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2, 3, 4]}),
        pd.DataFrame({"id": [2, 5, 6], "dt": list("bab"), "v": [20.0, 5, 6]}),
        pd.DataFrame({"id": [1, 6, 7], "dt": list("bba"), "v": [10.0, 60, 7]})]
OTHERS = [pd.DataFrame({"id": [100, 3, 8], "dt": list("aab"), "v": [100.0, 30, 8]}),
          pd.DataFrame({"id": [100, 4, 8], "dt": list("bab"), "v": [1000.0, 40, 80]})]
STALE = pd.DataFrame({"id": [1, 9, 100], "dt": list("aab"), "v": [111.0, 9, 1e4]})  # staged at the newest seed


def java_reads(warehouse):
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])


def seed(warehouse, options) -> tuple[TableSpec, list[int]]:
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                                "options": options})
    get_or_create_table(opts, "db.t", spec)
    from airflow_paimon.engine.files import layout
    import pyarrow as pa

    index_root = layout.default_root(warehouse, "index")
    return spec, [upsert(bootstrap(opts, "db.t", index_root, 2),
                         pa.Table.from_pandas(df, schema=spec.arrow_schema(), preserve_index=False),
                         run_id=f"seed-{i}")[0] for i, df in enumerate(SEED)]


@pytest.mark.usefixtures("on_spark_connect")
@pytest.mark.parametrize("mode", list(OPTIONS))
def test_a_rollback_between_write_and_commit_is_healed_by_the_commit_writing_the_batch_again(
        airflow_home, warehouse, monkeypatch, tmp_path, mode):
    from paimon_history_dags import rollback_healed

    use_warehouse(monkeypatch, warehouse)
    _, seeded = seed(warehouse, OPTIONS[mode])
    source = tmp_path / "stale.parquet"
    STALE.to_parquet(source, index=False)
    conf = {"table": "db.t", "source": str(source), "to_snapshot": seeded[0],
            "batches": [df.to_dict("records") for df in OTHERS]}
    run, states, xcoms = run_dag(rollback_healed, conf=conf)
    assert run.state == "success", states
    assert run.get_task_instance("commit").try_number == 1  # healed inside the task, not by Airflow's retries
    committed, written = xcoms["commit"], xcoms["assign_and_write"]
    assert committed["rewrites"] == 1 and not committed["already_committed"], committed
    # the batch went again against the table as it is now: its base is the other writers' last snapshot (which
    # reuses the id of the base the first write had, after the rollback)
    assert committed["base_snapshot_id"] == xcoms["other_writers"][-1], committed
    table = get_table({"warehouse": warehouse}, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().commit_user == written["commit_user"]  # the run's own
    assert_table_equals(table, expected_upsert([SEED[0], *OTHERS, STALE], "id"), "id")
    java_reads(warehouse)


@pytest.mark.usefixtures("on_spark_connect")
@pytest.mark.parametrize("mode", list(OPTIONS))
def test_without_rewrites_a_rollback_between_write_and_commit_lands_nothing_of_the_run(airflow_home, warehouse,
                                                                                        monkeypatch,
                                                                       tmp_path, mode):
    from paimon_history_dags import rollback_between
    from paimon_test_dags import write

    use_warehouse(monkeypatch, warehouse)
    _, seeded = seed(warehouse, OPTIONS[mode])
    first = seeded[0]  # the first seed's snapshot: its COMPACT half on a deletion-vector table
    source = tmp_path / "stale.parquet"
    STALE.to_parquet(source, index=False)
    conf = {"table": "db.t", "source": str(source), "to_snapshot": first,
            "batches": [df.to_dict("records") for df in OTHERS]}
    run, states, xcoms = run_dag(rollback_between, conf=conf)
    assert states == {"bootstrap_index": "success", "assign_and_write": "success", "rollback": "success",
                      "other_writers": "success", "commit": "failed"}, states
    base = xcoms["bootstrap_index"]["base_snapshot_id"]
    assert base == seeded[-1] and xcoms["rollback"]["snapshot_id"] == first
    after = xcoms["other_writers"]
    assert after[-1] >= base, "the other writers took the rolled-back ids again, the base's among them"
    assert run.get_task_instance("commit").try_number == 1, "a refused commit is not retried (the DAG has 2)"
    table = get_table({"warehouse": warehouse}, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == after[-1]  # nothing of the run landed
    expected = expected_upsert([SEED[0], *OTHERS], "id")
    assert_table_equals(table, expected, "id")
    java_reads(warehouse)

    # the run again from bootstrap-index (as Clear -> Downstream would): it lands once, on today's table
    run, states, xcoms = run_dag(write, conf={"table": "db.t", "source": str(source)})
    assert run.state == "success", states
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert([expected, STALE], "id"), "id")
    java_reads(warehouse)


@pytest.mark.usefixtures("on_spark_connect")
def test_the_rollback_operator_refuses_the_append_half_of_a_deletion_vector_write(airflow_home, warehouse,
                                                                                  monkeypatch, caplog, capfd):
    from paimon_history_dags import rollback_to

    use_warehouse(monkeypatch, warehouse)
    _, seeded = seed(warehouse, OPTIONS["deletion-vectors"])
    assert seeded == [2, 4, 6]  # each write: an APPEND, then its COMPACT
    run, states, _ = run_dag(rollback_to, conf={"table": "db.t", "to_snapshot": 3})
    out, err = capfd.readouterr()
    assert states == {"rollback": "failed"} and run.get_task_instance("rollback").try_number == 1
    assert "snapshot 3 is the first half of one commit" in out + err + caplog.text
    assert "roll back to snapshot 4 to keep that write, or to snapshot 2" in out + err + caplog.text
    table = get_table({"warehouse": warehouse}, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == 6
    assert_table_equals(table, expected_upsert(SEED, "id"), "id")
    run, states, xcoms = run_dag(rollback_to, conf={"table": "db.t", "to_snapshot": 4})
    assert run.state == "success" and xcoms["rollback"]["deleted_snapshots"] == [5, 6]
    assert_table_equals(get_table({"warehouse": warehouse}, "db.t"), expected_upsert(SEED[:2], "id"), "id")
    java_reads(warehouse)


def test_a_rewrite_killed_part_way_is_finished_by_the_commit_tasks_retry(airflow_home, warehouse, monkeypatch,
                                                                        tmp_path):
    """Other writers commit keys of the run after its write: the commit writes the batch again (a rewrite), whose
    assign-and-write empties the run's staging and is killed before it stages again (SIGKILL of its spark-submit
    driver at ``assign_write.before_stage``). The commit task's retry finds nothing staged and no commit of the
    run: it writes the batch again itself and lands it once."""
    from paimon_history_dags import rewrite_cut_off

    from airflow_paimon.engine.faults import CRASH_AT, CRASH_ONCE

    use_warehouse(monkeypatch, warehouse)
    seed(warehouse, OPTIONS["plain"])
    source, armed = tmp_path / "stale.parquet", tmp_path / "kill-the-rewrite"
    STALE.to_parquet(source, index=False)
    monkeypatch.setenv(CRASH_AT, "assign_write.before_stage")  # only once armed: after the first write staged
    monkeypatch.setenv(CRASH_ONCE, str(armed))
    conf = {"table": "db.t", "source": str(source), "arm": str(armed),
            "batches": [df.to_dict("records") for df in OTHERS]}
    run, states, xcoms = run_dag(rewrite_cut_off, conf=conf)
    assert run.state == "success", states
    assert not armed.exists()  # the kill happened, once
    assert run.get_task_instance("commit").try_number == 2  # try 1 died in its rewrite
    committed, written = xcoms["commit"], xcoms["assign_and_write"]
    assert committed["rewrites"] == 1 and not committed["already_committed"], committed
    assert committed["written"]["rows_in"] == len(STALE), committed
    table = get_table({"warehouse": warehouse}, "db.t")
    runs = [s for s in table.snapshot_manager().list_snapshots() if s.commit_user == written["commit_user"]]
    assert len(runs) == 1, runs  # the run's batch landed once
    assert_table_equals(table, expected_upsert([*SEED, *OTHERS, STALE], "id"), "id")
