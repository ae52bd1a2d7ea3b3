"""A deletion-vector write cut in half through the real operators (issue 54 item 4; spark-submit jobs, dag.test on
SQLite): the commit task's job is killed between the run's APPEND and COMPACT snapshots, a full compaction of the
table lands (lifting the APPEND's level-0 files), and the task is retried. The retry recognises its APPEND, does
not write the batch again (before, the commit rewrote it and an aggregation table counted it twice) and refuses
with HalfCommittedError, without further retries; the table holds the batch once."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from dag.dagrun import job_failures, run_dag, use_warehouse
from local_runner import bootstrap, upsert
from oracle import read_table

pytestmark = pytest.mark.dag

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "BIGINT"]],
                            "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                            "options": {"bucket": "2", "deletion-vectors.enabled": "true",
                                        "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}})
SEED = [pd.DataFrame({"id": [1, 10], "dt": ["a", "b"], "v": [5, 1]}),
        pd.DataFrame({"id": [10, 11], "dt": ["b", "b"], "v": [2, 3]})]
BATCH = pd.DataFrame({"id": [1, 2], "dt": ["a", "a"], "v": [1, 1]})


def test_a_commit_killed_between_append_and_compact_is_never_written_again(airflow_home, warehouse, monkeypatch,
                                                                           tmp_path):
    from paimon_half_commit_dags import half_commit

    use_warehouse(monkeypatch, warehouse)
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    for i, frame in enumerate(SEED):  # snapshots 1-4: each write an APPEND and its COMPACT
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(frame, schema=SPEC.arrow_schema(), preserve_index=False), f"seed-{i}")
    source = tmp_path / "batch.parquet"
    BATCH.to_parquet(source, index=False)

    run, states, xcoms = run_dag(half_commit, conf={"table": "db.t", "source": str(source)})

    assert states == {"bootstrap_index": "success", "assign_and_write": "success", "commit": "failed"}, states
    assert run.get_task_instance("commit").try_number == 2, "killed once, then refused without retries"
    table = get_table(opts, "db.t")
    manager = table.snapshot_manager()
    append, compaction = manager.get_snapshot_by_id(5), manager.get_latest_snapshot()
    assert (append.commit_kind, append.commit_user) == ("APPEND", xcoms["assign_and_write"]["commit_user"])
    assert (compaction.id, compaction.commit_kind) == (6, "COMPACT"), "nothing landed after the compaction"
    [refused] = job_failures(warehouse, "test_half_commit")  # try 2's (the killed try wrote none)
    assert refused == {
        "error": "HalfCommittedError: table db.t: this write's APPEND snapshot 5 landed, its COMPACT did not, and "
                 f"snapshot 6 (COMPACT by {compaction.commit_user}) changed its bucket "
                 f"{refused['error'].split('changed its bucket ')[1].split(' ')[0]} of partition ['a'], so its "
                 "COMPACT cannot land any more; the write is in the table and is not written again (that would "
                 "apply it twice), but its level-0 files stay invisible to deletion-vector readers (and without its "
                 "lookup changelog) until a full compaction, PaimonCompactOperator(full=True), compacts them",
        "retryable": False, "rewrite": False}, refused
    frame = read_table(table)
    assert not frame.duplicated(["dt", "id"]).any()
    assert {(dt, int(i)): int(v) for dt, i, v in zip(frame.dt, frame.id, frame.v)} == {
        ("a", 1): 6, ("a", 2): 1, ("b", 10): 3, ("b", 11): 3}  # the batch once (before: ('a', 1): 7, ('a', 2): 2)
