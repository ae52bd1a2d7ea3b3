"""The lifecycle operators in DAG runs (dag.test on SQLite, no Spark): three daily runs create the table, write a
batch in-process and tag the run's snapshot; an ALTER; a rollback to the first day's tag; then writing goes on.
Every operator runs twice in its DAG run and the second finds the work done. Each state is read back with
pypaimon against a pandas oracle and with Java Paimon."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pendulum
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.table.table import get_table
from dag.dagrun import run_dag, use_warehouse
from java_paimon import assert_java_reads_as_pypaimon, missing
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

pytestmark = pytest.mark.dag

DAYS = ["2026-01-01", "2026-01-02", "2026-01-03"]
BATCHES = [pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2, 3, 4]}),
           pd.DataFrame({"id": [2, 5, 6], "dt": list("bab"), "v": [20.0, 5, 6]}),
           pd.DataFrame({"id": [1, 6, 7], "dt": list("bba"), "v": [10.0, 60, 7]})]
AFTER = pd.DataFrame({"id": [2, 7, 100], "dt": list("bab"), "v": [200.0, 70, 100], "note": ["x", None, "y"]})


def schema_files(warehouse) -> list[str]:
    return sorted(p.name for p in (Path(warehouse) / "db.db" / "t" / "schema").iterdir())


def java_reads(warehouse, snapshot_id=None):
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"], snapshot_id=snapshot_id)


def test_create_tag_alter_rollback(airflow_home, warehouse, monkeypatch):
    from paimon_lifecycle_dags import alter, day, roll_back

    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    for i, ds in enumerate(DAYS):
        run, states, xcom = run_dag(day, logical_date=ds, conf={"batch": BATCHES[i].to_dict("records")})
        assert run.state == "success", states
        assert xcom["create"] == {"table": "db.t", "created": i == 0, "schema_id": 0}
        assert xcom["write"]["snapshot_id"] == i + 1
        assert xcom["tag"] == {"table": "db.t", "tag": f"day-{ds}", "snapshot_id": i + 1, "created": True}
        assert xcom["tag_again"] == {**xcom["tag"], "created": False}  # found, same snapshot
    table = get_table(opts, "db.t")
    assert sorted(table.list_tags()) == [f"day-{ds}" for ds in DAYS]
    for i, ds in enumerate(DAYS):
        assert_table_equals(table.copy({"scan.tag-name": f"day-{ds}"}), expected_upsert(BATCHES[:i + 1], "id"), "id")
        java_reads(warehouse, snapshot_id=i + 1)

    run, states, xcom = run_dag(alter)
    assert run.state == "success", states
    assert xcom["alter"] == {"table": "db.t", "schema_id": 1, "changed": True,
                             "changes": ["set snapshot.num-retained.min=3", "add column note STRING"]}
    assert xcom["alter_again"] == {"table": "db.t", "schema_id": 1, "changed": False, "changes": []}
    assert schema_files(warehouse) == ["schema-0", "schema-1"]  # one new schema, not two
    table = get_table(opts, "db.t")
    assert [f.name for f in table.table_schema.fields] == ["id", "dt", "v", "note"]
    java_reads(warehouse)

    run, states, xcom = run_dag(roll_back, conf={"to_tag": f"day-{DAYS[0]}"})
    assert run.state == "success", states
    assert xcom["rollback"] == {"table": "db.t", "snapshot_id": 1, "deleted_snapshots": [2, 3],
                                "deleted_tags": [f"day-{ds}" for ds in DAYS[1:]],
                                "deleted_index_snapshots": [2, 3], "already_rolled_back": False}
    assert xcom["rollback_again"] == {"table": "db.t", "snapshot_id": 1, "deleted_snapshots": [],
                                      "deleted_tags": [], "deleted_index_snapshots": [],
                                      "already_rolled_back": False}
    table = get_table(opts, "db.t")
    assert table.list_tags() == [f"day-{DAYS[0]}"]
    assert_table_equals(table, expected_upsert(BATCHES[:1], "id"), "id")
    java_reads(warehouse)
    index = layout.index_dir(layout.default_root(warehouse, "index"), "db.t")
    assert not [p for p in Path(index).iterdir() if p.name in ("snapshot-2", "snapshot-3")]

    # writing goes on from the rolled-back table (with the altered schema): the new snapshot 2. A fresh worker,
    # as each spark-submit job is: engine/write/context.py's table cache would keep the pre-ALTER schema in this one
    # (test_lifecycle.py::test_a_write_after_alter_in_the_same_worker_keeps_the_new_column).
    from airflow_paimon.engine.write.context import cached_table

    cached_table.cache_clear()
    source = pa.Table.from_pandas(AFTER, preserve_index=False)
    snapshot_id, _ = upsert(bootstrap(opts, "db.t", layout.default_root(warehouse, "index"), 2), source, run_id="after")
    assert snapshot_id == 2
    start = expected_upsert(BATCHES[:1], "id").assign(note=None)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([AFTER], "id", start=start), "id")
    java_reads(warehouse)


def test_refusal_fails_without_retries_naming_table_and_option(airflow_home, warehouse, monkeypatch, capfd, caplog):
    from paimon_lifecycle_dags import SCHEMA, refused

    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table

    use_warehouse(monkeypatch, warehouse)
    get_or_create_table({"warehouse": warehouse}, "db.t", TableSpec.from_dict(SCHEMA))
    for options, option in (({"changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"},
                             "changelog-producer"),  # Paimon's rule: no full-compaction changelog with vectors
                            ({"bucket": "4"}, "bucket")):
        capfd.readouterr()
        run, states, _ = run_dag(refused, conf={"set_options": options})
        out, err = capfd.readouterr()
        assert run.state == "failed" and states["alter"] == "failed", states
        assert run.get_task_instance("alter").try_number == 1, "a refusal is not retried (the DAG has 2)"
        assert f"table db.t, option '{option}'" in out + err + caplog.text
    assert schema_files(warehouse) == ["schema-0"]


def test_a_cleared_rollback_does_not_roll_back_again(airflow_home, warehouse, monkeypatch):
    """Exactly once per DAG run: the same DAG run's rollback task run again (cleared) after a new commit reports
    the rollback it did and leaves the new snapshot."""
    from paimon_lifecycle_dags import day, roll_back

    use_warehouse(monkeypatch, warehouse)
    for i, ds in enumerate(DAYS[:2]):
        assert run_dag(day, logical_date=ds, conf={"batch": BATCHES[i].to_dict("records")})[0].state == "success"
    when = pendulum.datetime(2026, 2, 1, tz="UTC")  # the same run_after: the same DAG run, run again

    def rollback_run():
        run = roll_back.test(run_after=when, logical_date=when, run_conf={"to_tag": f"day-{DAYS[0]}"})
        return run, run.get_task_instance("rollback").xcom_pull(task_ids="rollback")

    run, done = rollback_run()
    assert run.state == "success" and done["deleted_snapshots"] == [2]
    opts = {"warehouse": warehouse}
    source = pa.Table.from_pandas(BATCHES[2], preserve_index=False)
    assert upsert(bootstrap(opts, "db.t", layout.default_root(warehouse, "index"), 2), source, run_id="new")[0] == 2
    again, done = rollback_run()
    assert again.run_id == run.run_id and again.state == "success"
    assert done["already_rolled_back"] is True and done["deleted_snapshots"] == [2]
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([BATCHES[0], BATCHES[2]], "id"), "id")


def test_expire_partitions_in_a_dag_run(airflow_home, warehouse, monkeypatch):
    """Daily partitions 2026-01-01..05; the run of 2026-01-06 (Airflow 3's cron schedule: data interval end =
    logical date = 01-06 00:00; cut-off 01-04)
    drops 01-01..03 in one OVERWRITE snapshot; its second task finds that snapshot; the next write re-inserts a
    key of a dropped partition exactly once."""
    from airflow_paimon.engine.table.table import TableSpec, get_or_create_table
    from paimon_lifecycle_dags import expire

    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**SCHEMA_E, "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
    get_or_create_table(opts, "db.e", spec)
    days = [f"2026-01-0{d}" for d in range(1, 6)]
    first = pd.DataFrame({"id": range(10), "dt": [d for d in days for _ in (0, 1)], "v": [float(i) for i in range(10)]})
    index_root = layout.default_root(warehouse, "index")
    upsert(bootstrap(opts, "db.e", index_root, 2), pa.Table.from_pandas(first, schema=spec.arrow_schema(),
                                                                         preserve_index=False), run_id="load")
    run, states, xcoms = run_dag(expire, "2026-01-06")
    assert run.state == "success", states
    gone = [{"dt": d} for d in days[:3]]
    assert xcoms["expire"] == {"table": "db.e", "snapshot_id": 2, "expired_partitions": gone,
                               "already_committed": False, "dry_run": False}
    assert xcoms["expire_again"] == {**xcoms["expire"], "already_committed": True}
    kept = first[first.dt >= "2026-01-04"]
    assert_table_equals(get_table(opts, "db.e"), kept, "id")
    back = pd.DataFrame({"id": [0, 9], "dt": ["2026-01-05", "2026-01-05"], "v": [100.0, 109.0]})
    upsert(bootstrap(opts, "db.e", index_root, 2), pa.Table.from_pandas(back, schema=spec.arrow_schema(),
                                                                         preserve_index=False), run_id="after")
    assert_table_equals(get_table(opts, "db.e"), expected_upsert([kept, back], "id"), "id")
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, "db.e", ["id"])


SCHEMA_E = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
            "partition_keys": ["dt"]}
