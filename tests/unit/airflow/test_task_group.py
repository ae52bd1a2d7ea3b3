"""paimon_upsert's TaskGroup and the operators' upstream_output, as DAG structure (no task runs here; the runs
are in tests/dag/test_task_group_dag.py)."""
from __future__ import annotations

import pendulum
import pytest
from airflow.sdk import DAG
from airflow.providers.standard.operators.empty import EmptyOperator

from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)
from airflow_paimon.task_group import group_id_of, paimon_upsert


def new_dag(dag_id: str = "d") -> DAG:
    return DAG(dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"))


def test_the_group_chains_like_a_task_and_wires_each_task_to_its_upstreams_output():
    with new_dag() as dag:
        extract, notify = EmptyOperator(task_id="extract"), EmptyOperator(task_id="notify")
        extract >> paimon_upsert(table="demo.orders", source="/in/{{ ds }}.parquet", write_mode="overwrite",
                                 compact_kwargs={"every_n_runs": 3}, bootstrap_kwargs={"shards": 2},
                                 spark_conf={"spark.executor.memory": "1g"}) >> notify
    up = {t.task_id: t.upstream_task_ids for t in dag.tasks}
    assert up == {"extract": set(), "demo_orders.bootstrap_index": {"extract"},
                  "demo_orders.assign_and_write": {"demo_orders.bootstrap_index"},
                  "demo_orders.commit": {"demo_orders.assign_and_write"},
                  "demo_orders.compact": {"demo_orders.commit"}, "notify": {"demo_orders.compact"}}
    write, commit, compact = (dag.get_task(f"demo_orders.{t}") for t in ("assign_and_write", "commit", "compact"))
    # The dependencies inside the group come from the XComArgs alone.
    assert [op.task_id for op, _ in write.upstream_output.iter_references()] == ["demo_orders.bootstrap_index"]
    assert [op.task_id for op, _ in commit.upstream_output.iter_references()] == ["demo_orders.assign_and_write"]
    assert [op.task_id for op, _ in compact.upstream_output.iter_references()] == ["demo_orders.commit"]
    assert (write.source, write.write_mode, compact.every_n_runs) == ("/in/{{ ds }}.parquet", "overwrite", 3)
    assert dag.get_task("demo_orders.bootstrap_index").shards == 2
    assert {t.spark_conf["spark.executor.memory"] for t in dag.tasks if t.task_id.startswith("demo_")} == {"1g"}
    assert {t.table for t in dag.tasks if t.task_id.startswith("demo_")} == {"demo.orders"}


def test_without_compaction_the_group_ends_with_the_commit():
    with new_dag() as dag:
        group = paimon_upsert("orders_load", table="demo.orders", source="/in.parquet", compact=False)
    assert sorted(t.task_id for t in dag.tasks) == ["orders_load.assign_and_write", "orders_load.bootstrap_index",
                                                    "orders_load.commit"]
    assert [t.task_id for t in group.get_leaves()] == ["orders_load.commit"]


def test_group_ids_come_from_table_names():
    assert group_id_of("demo.orders") == "demo_orders"
    assert group_id_of("db-1.t$x") == "db-1_t_x"
    with pytest.raises(ValueError, match="templated: give paimon_upsert a group_id"):
        group_id_of("{{ params.table }}")
    with new_dag():
        with pytest.raises(ValueError, match="give paimon_upsert a group_id"):
            paimon_upsert(table="{{ params.table }}", source="/in.parquet")
        paimon_upsert("by_param", table="{{ params.table }}", source="/in.parquet")


def test_upstream_output_must_be_the_output_of_the_right_task():
    with new_dag():
        bootstrap = PaimonBootstrapIndexOperator(task_id="bootstrap", table="db.t")
        write = PaimonAssignAndWriteOperator(task_id="write", table="db.t", source="/in.parquet",
                                             upstream_output=bootstrap.output)
        assert write.upstream_task_ids == {"bootstrap"}  # set by Airflow from the XComArg
        with pytest.raises(ValueError, match=r"commit \(table db.t\): upstream_output must be the output of one "
                                             r"PaimonAssignAndWriteOperator, got the output of bootstrap "
                                             r"\(PaimonBootstrapIndexOperator\)"):
            PaimonCommitOperator(task_id="commit", table="db.t", upstream_output=bootstrap.output)
        with pytest.raises(TypeError, match="upstream_output must be an XComArg"):
            PaimonCompactOperator(task_id="compact", table="db.t", upstream_output="{{ ti.xcom_pull('commit') }}")


def test_a_result_given_as_upstream_output_is_checked_for_the_table():
    from airflow.sdk.exceptions import AirflowFailException

    result = {"table": "db.t", "snapshot_id": 3, "base_snapshot_id": 2, "already_committed": False}
    with new_dag():
        mine = PaimonCompactOperator(task_id="compact", table="db.t", upstream_output=result)
        theirs = PaimonCompactOperator(task_id="compact_u", table="db.u", upstream_output=result)
    assert mine.upstream_result({}, PaimonCommitOperator) == result
    with pytest.raises(AirflowFailException, match=r"compact_u writes table db.u but its upstream \(upstream_output\) "
                                                   "is for table db.t"):
        theirs.upstream_result({}, PaimonCommitOperator)


def test_schema_evolution_reaches_the_bootstrap_and_the_write_and_is_checked_at_parse_time():
    with new_dag() as dag:
        paimon_upsert(table="demo.orders", source="/in.parquet", schema_evolution="add_columns")
    assert {dag.get_task(f"demo_orders.{t}").schema_evolution for t in ("bootstrap_index", "assign_and_write")} == {
        "add_columns"}
    with new_dag("e"), pytest.raises(ValueError, match="schema_evolution must be one of"):
        paimon_upsert(table="demo.orders", source="/in.parquet", schema_evolution="add")
