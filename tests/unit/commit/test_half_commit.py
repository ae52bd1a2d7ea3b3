"""A deletion-vector write cut in half (issue 54 item 4): its commit lands the APPEND snapshot and is killed before
the COMPACT of the same commit identity; a compaction lands; the commit is retried. The retry completes the write
and never writes it again: it lands the COMPACT on top of the compaction when that changed none of the write's
buckets, and otherwise refuses with HalfCommittedError — neither retried nor healed by a rewrite (writing the batch
again would apply it twice on top of its APPEND). Driven as the commit operator would (a rewrite when the error
says so), on a deduplicate and an aggregation table; the table is the pandas oracle's, each contribution once."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import HalfCommittedError, heals_by_rewrite, is_retryable
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, compact, stage_run, upsert, write_run
from oracle import read_table

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "BIGINT"]]
ENGINES = {"deduplicate": {}, "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}}
SEED = [pd.DataFrame({"id": [1, 10], "dt": ["a", "b"], "v": [5, 1]}),
        pd.DataFrame({"id": [10, 11], "dt": ["b", "b"], "v": [2, 3]})]  # partition b: two runs to compact
BATCH = pd.DataFrame({"id": [1, 2], "dt": ["a", "a"], "v": [1, 1]})  # partition a only


class Killed(Exception):
    """The commit task killed between its APPEND and its COMPACT."""


def _spec(engine: str) -> TableSpec:
    return TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                                "options": {"bucket": "2", "deletion-vectors.enabled": "true", **ENGINES[engine]}})


def _arrow(spec: TableSpec, frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False)


def _expected(engine: str) -> dict:
    rows = pd.concat([*SEED, BATCH])
    merged = rows.groupby(["dt", "id"]).v.agg("sum" if engine == "aggregation" else "last")
    return {k: int(v) for k, v in merged.items()}


def _table_as_dict(table) -> dict:
    frame = read_table(table)
    assert not frame.duplicated(["dt", "id"]).any(), frame
    return {(dt, int(i)): int(v) for dt, i, v in zip(frame.dt, frame.id, frame.v)}


def _cut_in_half(warehouse, monkeypatch, engine: str):
    """The seeded table and the batch's commit spec, whose first commit landed only its APPEND."""
    from airflow_paimon.engine.commit import committer
    from airflow_paimon.engine.runs.commit import run_commit

    opts, spec = {"warehouse": warehouse}, _spec(engine)
    get_or_create_table(opts, "db.t", spec)
    for i, frame in enumerate(SEED):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), _arrow(spec, frame), f"seed-{i}")
    run = bootstrap(opts, "db.t", warehouse + "/.index", 2)
    commit_spec = stage_run(run, _arrow(spec, BATCH), "r1")

    def killed(name):
        if name == "commit.between_append_and_compact":
            raise Killed(name)

    with monkeypatch.context() as m:
        m.setattr(committer, "crash_point", killed)
        with pytest.raises(Killed):
            run_commit(commit_spec)
    append = get_table(opts, "db.t").snapshot_manager().get_latest_snapshot()
    assert append.commit_kind == "APPEND" and append.commit_user == commit_spec.commit_user
    return opts, spec, run, commit_spec, append.id


def _commit_as_the_operator(opts, spec, commit_spec, warehouse):
    """The commit task's retry: the commit job, and on an error that says a rewrite heals it, the run's batch
    written again from bootstrap-index and committed (PaimonCommitOperator's rewrite)."""
    from airflow_paimon.engine.runs.commit import run_commit

    try:
        return run_commit(commit_spec)
    except Exception as e:
        if not heals_by_rewrite(e):
            raise
    again = stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2), _arrow(spec, BATCH), "r1")
    return run_commit(again)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_compaction_of_other_buckets_in_between_the_retry_lands_the_compact_on_top(warehouse, monkeypatch,
                                                                                    engine):
    opts, spec, _, commit_spec, append_id = _cut_in_half(warehouse, monkeypatch, engine)
    done = compact(get_table(opts, "db.t"), run_id="c", full=True, partition_filter={"dt": "b"})
    assert done["snapshot_id"] == append_id + 1 and done["compacted_buckets"], done  # partition b only

    result = _commit_as_the_operator(opts, spec, commit_spec, warehouse)

    table = get_table(opts, "db.t")
    latest = table.snapshot_manager().get_latest_snapshot()
    assert (result.snapshot_id, result.commit_kind, result.already_committed) == (append_id + 2, "COMPACT", False)
    assert (latest.id, latest.commit_kind, latest.commit_user) == (append_id + 2, "COMPACT", commit_spec.commit_user)
    assert _table_as_dict(table) == _expected(engine)  # the batch once: {('a', 1): 6, ('a', 2): 1, ...} summed
    from airflow_paimon.engine.runs.commit import run_commit

    assert run_commit(commit_spec).already_committed  # and again: nothing left to do


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_compaction_of_its_buckets_in_between_the_retry_refuses_and_never_writes_again(warehouse, monkeypatch,
                                                                                       engine):
    opts, spec, _, commit_spec, append_id = _cut_in_half(warehouse, monkeypatch, engine)
    done = compact(get_table(opts, "db.t"), run_id="c", full=True, scope="table")  # takes the APPEND's level 0
    assert done["snapshot_id"] == append_id + 1, done

    with pytest.raises(HalfCommittedError) as refused:
        _commit_as_the_operator(opts, spec, commit_spec, warehouse)

    assert not is_retryable(refused.value) and not heals_by_rewrite(refused.value)
    assert str(refused.value) == (
        f"table db.t: this write's APPEND snapshot {append_id} landed, its COMPACT did not, and snapshot "
        f"{append_id + 1} (COMPACT by {compaction_user(opts, append_id + 1)}) changed its bucket "
        f"{refused_bucket(refused.value)} of partition ['a'], so its COMPACT cannot land any more; the write is in the "
        "table and is not written again (that would apply it twice), but its level-0 files stay invisible to "
        "deletion-vector readers (and without its lookup changelog) until a full compaction, "
        "PaimonCompactOperator(full=True), compacts them")
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == append_id + 1  # nothing landed
    assert _table_as_dict(table) == _expected(engine)  # the compaction lifted the batch: once, not twice
    compact(table, run_id="c2", full=True, scope="table")  # what the message says to run
    assert _table_as_dict(get_table(opts, "db.t")) == _expected(engine)


def test_a_retried_write_finds_the_append_and_its_commit_completes_it(warehouse, monkeypatch):
    """assign-and-write run again (same base) finds the run's APPEND: it writes nothing, and the commit from its
    result lands the COMPACT of what the first attempt staged."""
    from airflow_paimon.engine.runs.commit import run_commit

    opts, spec, run, _, append_id = _cut_in_half(warehouse, monkeypatch, "aggregation")
    written = write_run(run, _arrow(spec, BATCH), "r1")
    assert written.already_committed and written.rows_written == 0
    result = run_commit(run.pipeline.spec("commit", {"assign_and_write": written.to_dict()}))
    assert (result.snapshot_id, result.commit_kind) == (append_id + 1, "COMPACT")
    assert _table_as_dict(get_table(opts, "db.t")) == _expected("aggregation")


def compaction_user(opts, snapshot_id: int) -> str:
    return get_table(opts, "db.t").snapshot_manager().get_snapshot_by_id(snapshot_id).commit_user


def refused_bucket(error: HalfCommittedError) -> str:
    return str(error).split("changed its bucket ", 1)[1].split(" ", 1)[0]
