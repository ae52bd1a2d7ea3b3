"""The bootstrap decided from table metadata (tasks=None, what PaimonBootstrapIndexOperator does before it would
submit a Spark job): a reusable index or a table that needs none gives the job's own result, marked
``decided_by: metadata``; anything that needs shards built or caught up gives None (the job runs)."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.runs.bootstrap_index import bootstrap_index
from airflow_paimon.engine.jobs.specs import BootstrapSpec
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, bootstrap_result, upsert

CROSS = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
                             "partition_keys": ["dt"], "options": {"bucket": "-1"}})
FIXED = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
                             "options": {"bucket": "2"}})


def _decide(opts, index_root):
    return bootstrap_index(BootstrapSpec(catalog_options=opts, table="db.t", shards=2, index_root=index_root), None)


def _batch(spec, ids, dt="a"):
    return pa.Table.from_pandas(pd.DataFrame({"id": ids, "dt": dt, "v": 1.0}), schema=spec.arrow_schema(),
                                preserve_index=False)


def test_cross_partition_reuse_is_decided_from_metadata_and_work_is_not(warehouse):
    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", CROSS)
    empty = _decide(opts, index_root)  # the empty table's index has no keys: written here, no job
    assert (empty.index_decision, empty.keys, empty.base_snapshot_id, empty.decided_by) == (
        "rebuilt", 0, None, "metadata")
    upsert(bootstrap(opts, "db.t", index_root, 2), _batch(CROSS, [1, 2, 3]), run_id="r1")  # publishes snapshot 1's
    decided = _decide(opts, index_root)
    job = bootstrap_result(opts, "db.t", index_root, 2)  # what the job computes at the same state
    assert decided.decided_by == "metadata" and job.decided_by == "spark"
    assert decided.to_dict() == {**job.to_dict(), "decided_by": "metadata"}
    assert (decided.index_decision, decided.keys, decided.base_snapshot_id) == ("reused", 3, 1)

    # another writer (its index elsewhere) committed snapshot 2: catching up is work for the job
    upsert(bootstrap(opts, "db.t", warehouse + "/.other-index", 2), _batch(CROSS, [9], dt="b"), run_id="other")
    assert _decide(opts, index_root) is None
    assert bootstrap_result(opts, "db.t", index_root, 2).index_decision == "caught_up"
    # no index at all for a table holding data: rebuilding it from the data files is work for the job
    assert _decide(opts, warehouse + "/.fresh-index") is None
    assert bootstrap_result(opts, "db.t", warehouse + "/.fresh-index", 2).keys == 4


def test_fixed_bucket_needs_no_index_and_no_job(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", FIXED)
    decided = _decide(opts, warehouse + "/.index")
    assert (decided.index_decision, decided.decided_by, decided.base_snapshot_id) == ("not_needed", "metadata", None)


def _compact_spec(opts, snapshot_id, run_id="c", **kwargs):
    from airflow_paimon.engine.jobs.specs import CompactSpec

    return CompactSpec(catalog_options=opts, table="db.t", dag_id="dag", run_id=run_id, snapshot_id=snapshot_id,
                       **kwargs)


def test_compaction_not_due_or_done_is_decided_from_metadata(warehouse):
    """Compaction: nothing due → the job's "nothing" result without Spark; due → None (the job rewrites); this
    run's compaction committed by an earlier try → that snapshot, without Spark."""
    from airflow_paimon.engine.runs.compact import decide_compaction
    from local_runner import compact

    opts, index_root = {"warehouse": warehouse}, warehouse + "/.index"
    get_or_create_table(opts, "db.t", CROSS)
    upsert(bootstrap(opts, "db.t", index_root, 2), _batch(CROSS, [1, 2, 3]), run_id="r1")
    quiet = decide_compaction(_compact_spec(opts, 1))
    assert (quiet.compacted_buckets, quiet.snapshot_id, quiet.decided_by) == (0, 1, "metadata")
    assert decide_compaction(_compact_spec(opts, 1, full=True)) is None  # a full compaction has work
    done = compact(get_table(opts, "db.t"), run_id="c", snapshot_id=1, full=True)
    again = decide_compaction(_compact_spec(opts, 1, full=True))  # the same run's retry finds its snapshot
    assert again.already_committed and again.snapshot_id == done["snapshot_id"] == 2
    assert again.decided_by == "metadata"
