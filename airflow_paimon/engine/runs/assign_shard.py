"""One assign task: a shard's source rows in, assigned rows out (run by the Spark task the shard is routed to).

The shard's changes are staged next to the run's commit messages; the commit task publishes them as the
index of the snapshot it commits.
"""
from __future__ import annotations

import tempfile
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator

import pyarrow as pa

from airflow_paimon.engine.assign.assigner import KEY, assign_shard
from airflow_paimon.engine.index.buckets import BucketAssigner
from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.index.layout import base_manifest
from airflow_paimon.engine.index.store import export_changes, load_shard, stage_shard

COUNTERS = ("rows_in", "moved_keys", "dropped", "removed_keys", "new_keys")


@contextmanager
def shard_assigner(ctx: WriteContext, shard: int) -> Iterator[Callable[[pa.Table], pa.Table]]:
    """``assign(rows) -> rows to write`` against the shard's index, for one or more key-disjoint batches of the
    shard's rows (carrying _order and _row_kind); the shard's changes and counters are staged when the block
    ends without an error."""
    meta = base_manifest(ctx.index_uri, ctx.base_snapshot_id).shard(shard)
    counters = Counter({k: 0 for k in COUNTERS})
    with tempfile.TemporaryDirectory(prefix="paimon-shard-") as tmp:
        with load_shard(ctx.index_uri, meta, tmp, ctx.index_options) as index:
            index.disjoint = True  # no two assign() calls share a key: a chunk's lookups need no earlier changes
            buckets = BucketAssigner(shard, ctx.shards, ctx.target_row_num, meta.bucket_counts)

            def assign(rows: pa.Table) -> pa.Table:
                rows = ctx.conform(rows)
                rows = rows.append_column(KEY, encode_keys(rows, ctx.primary_keys))
                result = assign_shard(rows, partition_fields=ctx.partition_keys,
                                      partition_types=ctx.partition_types, index=index, buckets=buckets,
                                      rules=ctx.merge_rules, identifier=ctx.identifier)
                counters.update({k: getattr(result, k) for k in COUNTERS})
                return result.rows

            yield assign
            local, file_type, entries = export_changes(index, meta, tmp)
            stage_shard(ctx.staging_uri, shard, local, file_type, entries,
                        meta.keys + counters["new_keys"] - counters["removed_keys"], buckets.to_dict(),
                        dict(counters))

