"""assign-and-write on Spark: shuffle source rows by key hash to their index shard, assign there, shuffle by
(partition, bucket) so each bucket has one writer, write files, stage the commit messages on the driver."""
from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa

from airflow_paimon.engine import storage
from airflow_paimon.engine.assign.assigner import BUCKET, DELETE, KEY, KIND, ORDER
from airflow_paimon.engine.assign.task import assign_task
from airflow_paimon.engine.commit.committer import find_commit
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.commit.staging import Staged, stage
from airflow_paimon.engine.context import WriteContext, table_ordering
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.index.keys import encode_keys, encode_partition_values, shard_of
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.plan import buckets_at
from airflow_paimon.engine.table import get_table
from airflow_paimon.engine.write.task import write_task
from airflow_paimon.spark.source import read_source, validate_and_cast

log = logging.getLogger(__name__)
SHARD = "_shard"
WRITTEN = "message binary, rows_written long, deletes long, files long"


def staging_uri(staging_root: str, identifier: str, commit_user: str) -> str:
    return storage.join(staging_root, identifier, commit_user)


def run_assign_and_write(spark, spec: dict) -> dict:
    identifier = spec["table"]
    table = get_table(spec["catalog_options"], identifier)
    base, index_uri = spec["base_snapshot_id"], spec["index_uri"]
    ident = CommitIdentity.for_run(spec["dag_id"], spec["run_id"], identifier)
    staged_at = staging_uri(spec["staging_root"], identifier, ident.commit_user)
    result = {"table": identifier, "base_snapshot_id": base, "commit_user": ident.commit_user,
              "commit_identifier": ident.commit_identifier, "staging_uri": staged_at}

    done = find_commit(table, ident.commit_user, ident.commit_identifier, base)
    if done is not None:  # a retry after this run already committed: write nothing again
        log.info("run already committed as snapshot %s; nothing to write", done.id)
        return {**result, "rows_in": 0, "rows_written": 0, "deletes": 0, "moved_keys": 0, "files": 0,
                "already_committed": True}
    manifest = read_manifest(index_uri, base)
    if manifest is None:
        raise ValidationError(identifier, f"no published index at {index_uri} for snapshot {base}; "
                                          "re-run bootstrap-index")
    if not table.primary_keys or table.bucket_mode().name != "CROSS_PARTITION":
        raise ValidationError(identifier, f"bucket mode {table.bucket_mode().name} is not supported yet "
                                          "(cross-partition primary-key tables only)")

    table_ordering(table)  # refuses what Paimon refuses (sequence.field on a cross-partition table)
    source, rows_in = validate_and_cast(read_source(spark, spec["source"], identifier), table, identifier)
    snapshot = table.snapshot_manager().get_snapshot_by_id(base) if base else None
    storage.delete_dir(staged_at)  # a retried attempt starts clean; nothing here is committed yet
    ctx = WriteContext(spec["catalog_options"], identifier, base, index_uri, manifest.shards, staged_at)
    ctx.max_sequence_numbers = {(encode_partition_values(b.partition, ctx.partition_types), b.bucket):
                                b.max_sequence_number for b in buckets_at(table, snapshot)}

    written = _assign_and_write(spark, source, ctx).collect()
    messages = [bytes(r["message"]) for r in written]
    counters = {"rows_in": rows_in, "rows_written": sum(r["rows_written"] for r in written),
                "deletes": sum(r["deletes"] for r in written), "files": sum(r["files"] for r in written)}
    # Under deduplicate each moved key leaves exactly one DELETE row behind in its old bucket.
    counters["moved_keys"] = counters["deletes"]
    stage(table, staged_at, Staged(identifier, base, ident.commit_user, ident.commit_identifier, [],
                                   extra={**counters, "index_uri": index_uri}), messages)
    log.info("staged %s commit messages for %s at %s", len(messages), identifier, staged_at)
    return {**result, **counters, "already_committed": False}


def _assign_and_write(spark, source, ctx: WriteContext):
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, ByteType, StructField, StructType

    primary_keys, shards = ctx.primary_keys, ctx.shards
    source = source.withColumn(ORDER, F.monotonically_increasing_id())
    keyed_schema = StructType(source.schema.fields + [StructField(KEY, BinaryType(), False),
                                                      StructField(SHARD, IntegerType(), False)])

    def add_key(batches):
        for batch in batches:
            keys = encode_keys(batch, primary_keys)
            yield pa.RecordBatch.from_arrays(
                batch.columns + [keys, pa.array(shard_of(keys, shards), pa.int32())], names=keyed_schema.names)

    def assign(rows: pa.Table) -> pa.Table:
        shard = rows.column(SHARD)[0].as_py()
        assigned, _ = assign_task(ctx, shard, rows.drop_columns([SHARD]))
        return assigned

    def write(rows: pa.Table) -> pa.Table:
        message, counters = write_task(ctx, rows)
        deletes = int(np.count_nonzero(rows.column(KIND).to_numpy() == DELETE))
        return pa.table({"message": [message], "rows_written": [counters["rows_written"] - deletes],
                         "deletes": [deletes], "files": [counters["files"]]})

    assigned_schema = StructType([f for f in source.schema.fields if f.name != ORDER]
                                 + [StructField(KEY, BinaryType(), False), StructField(BUCKET, IntegerType(), False),
                                    StructField(KIND, ByteType(), False)])
    keyed = source.mapInArrow(add_key, keyed_schema)
    assigned = keyed.groupBy(SHARD).applyInArrow(assign, assigned_schema)
    return assigned.groupBy(*ctx.partition_keys, BUCKET).applyInArrow(write, WRITTEN)
