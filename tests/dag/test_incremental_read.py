"""Incremental read through the Spark job, in a DAG: sensor (deferred) → incremental read → write the change,
with its row kinds, into a mirror table. The parquet equals the pandas diff of two full pypaimon reads; the
mirror equals the source. On Spark Connect, but for the lookup changelog follower's first run: the incremental
read's own spark-submit."""
from __future__ import annotations

import glob

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.table.table import get_or_create_table, get_table
from dag.dagrun import run_dag, use_warehouse
from incremental_oracle import expected_diff, normalised, read_at
from local_runner import bootstrap, upsert
from oracle import read_table
from unit.read.test_incremental import CROSS, batches

pytestmark = pytest.mark.dag


@pytest.mark.usefixtures("on_spark_connect")
def test_follow_a_table_through_snapshot_sensor_and_incremental_read(airflow_home, warehouse, monkeypatch,
                                                                     tmp_path):
    import paimon_sensor_dags

    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.src", CROSS)
    frames, kinds = batches(seed=9)

    def write_source(i):  # the upstream writer (the engine in-process: moves, deletes, rewrites)
        upsert(bootstrap(opts, "db.src", warehouse + "/.index", 2),
               pa.Table.from_pandas(frames[i], schema=CROSS.arrow_schema(), preserve_index=False), f"r{i}",
               row_kinds=kinds[i])

    write_source(0)
    source = get_table(opts, "db.src")
    for run, (after, writes) in enumerate(((0, [1, 2]), (3, []))):
        for i in writes:
            write_source(i)
        end = source.snapshot_manager().get_latest_snapshot().id
        target = str(tmp_path / f"changes-{run}")
        if run == 1:  # nothing new yet: the sensor defers until this snapshot lands
            import threading
            import time
            threading.Thread(target=lambda: (time.sleep(4), write_source(2)), daemon=True).start()
            end = 4
        dag_run, states, xcoms = run_dag(paimon_sensor_dags.follow,
                                         conf={"after": after, "target": target})
        assert dag_run.state == "success", states
        read = xcoms["read_changes"]
        assert (read["start_snapshot_id"], read["end_snapshot_id"]) == (after, end)
        expected = expected_diff(source, after, end, ["dt", "id"])
        actual = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob(f"{target}/part-*.parquet"))])
        actual = normalised(actual[list(expected.columns)], ["dt", "id"])
        pd.testing.assert_frame_equal(actual, expected, check_dtype=False)
        assert (read["inserts"], read["updates"], read["deletes"]) == tuple(
            int((expected.row_kind == k).sum()) for k in ("+I", "+U", "-D"))
        mirror = read_table(get_table(opts, "db.mirror"))
        assert not mirror.duplicated(["dt", "id"]).any()
        cols = ["id", "dt", "v", "s"]
        pd.testing.assert_frame_equal(normalised(mirror[cols].assign(row_kind=""), ["dt", "id"]),
                                      normalised(read_at(source, end)[cols].assign(row_kind=""), ["dt", "id"]),
                                      check_dtype=False)


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_follow_a_table_through_its_changelog(airflow_home, warehouse, monkeypatch, tmp_path, producer, request):
    """The same follower on a table with ``changelog-producer=input`` (the write's rows) or ``lookup`` (before and
    after images from the write's COMPACT snapshot): the read (scan_mode auto) takes the changelog — every change
    of the snapshot with its row kind, a moved key as -D in its old partition — and the mirror it feeds equals the
    source after each snapshot."""
    import paimon_sensor_dags
    from changelog_tables import changelog_of

    if producer == "input":  # the lookup follower's first run goes through spark-submit: the incremental read's own
        request.getfixturevalue("on_spark_connect")
    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    spec = CROSS.to_dict()
    get_or_create_table(opts, "db.src", type(CROSS).from_dict(
        {**spec, "options": {**spec["options"], "changelog-producer": producer}}))
    frames, kinds = batches(seed=4)
    source = get_table(opts, "db.src")
    cols = ["id", "dt", "v", "s"]
    for i in range(len(frames)):
        if i == 1:  # spark-submit shown once (each job kind's submit has a test of its own): the rest on Connect
            request.getfixturevalue("on_spark_connect")
        upsert(bootstrap(opts, "db.src", warehouse + "/.index", 2),
               pa.Table.from_pandas(frames[i], schema=CROSS.arrow_schema(), preserve_index=False), f"r{i}",
               row_kinds=kinds[i])
        end = source.snapshot_manager().get_latest_snapshot().id
        target = str(tmp_path / f"changes-{i}")
        dag_run, states, xcoms = run_dag(paimon_sensor_dags.follow, conf={"after": end - 1, "target": target})
        assert dag_run.state == "success", states
        read = xcoms["read_changes"]
        expected = changelog_of(source, end - 1, end)
        assert read["scan_mode"] == "changelog" and read["rows"] == len(expected) > 0
        assert xcoms["wait"]["changelog_record_count"] == len(expected)  # the sensor's event says it has one
        assert (read["inserts"], read["deletes"]) == (int((expected.row_kind == "+I").sum()),
                                                      int((expected.row_kind == "-D").sum()))
        actual = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob(f"{target}/part-*.parquet"))])
        identity = ["dt", "id", "row_kind"]
        pd.testing.assert_frame_equal(actual[cols + ["row_kind"]].sort_values(identity).reset_index(drop=True),
                                      expected[cols + ["row_kind"]].sort_values(identity).reset_index(drop=True),
                                      check_dtype=False)
        mirror = read_table(get_table(opts, "db.mirror"))
        assert not mirror.duplicated(["dt", "id"]).any()
        pd.testing.assert_frame_equal(normalised(mirror[cols].assign(row_kind=""), ["dt", "id"]),
                                      normalised(read_at(source, end)[cols].assign(row_kind=""), ["dt", "id"]),
                                      check_dtype=False)
