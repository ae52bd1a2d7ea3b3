"""One write task: one (partition, bucket)'s assigned rows in, one staged CommitMessage out."""
from __future__ import annotations

import pyarrow as pa

from airflow_paimon.engine.assign.assigner import BUCKET, KIND
from airflow_paimon.engine.commit.staging import encode_message
from airflow_paimon.engine.context import WriteContext
from airflow_paimon.engine.index.keys import encode_partitions
from airflow_paimon.engine.write.bucket_writer import write_bucket


def write_task(ctx: WriteContext, rows: pa.Table) -> tuple[bytes, dict]:
    """Write the rows of one (partition, bucket); returns (encoded CommitMessage, counters)."""
    table = ctx.table()
    bucket = int(rows.column(BUCKET)[0].as_py())
    partition = tuple(rows.column(k)[0].as_py() for k in ctx.partition_keys)
    encoded_partition = encode_partitions(rows.slice(0, 1), ctx.partition_keys)[0].as_py()
    max_seq = ctx.max_sequence_numbers.get((encoded_partition, bucket), -1)
    message = write_bucket(table, partition, bucket, rows, rows.column(KIND).combine_chunks(), max_seq)
    counters = {"rows_written": rows.num_rows, "files": len(message.new_files)}
    return encode_message(table, message), counters
