"""Append-only tables (no primary key): pypaimon's own writer per Spark partition; its commit messages are
staged like the others'."""
from __future__ import annotations

import pyarrow as pa

from airflow_paimon.engine.commit.staging import encode_message
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.spark.pipelines.common import WRITTEN


def pipeline(source, ctx: WriteContext):
    names = [f.name for f in ctx.arrow_schema]

    def write(batches):
        table = ctx.table()
        builder = table.new_batch_write_builder()
        writer = builder.new_write()
        rows = 0
        for batch in batches:
            batch = ctx.conform(pa.Table.from_batches([batch]).select(names))
            writer.write_arrow(batch)
            rows += batch.num_rows
        messages = writer.prepare_commit()
        writer.close()
        for m in messages:
            yield pa.RecordBatch.from_pydict({"message": [encode_message(table, m)], "rows_written": [rows],
                                              "deletes": [0], "files": [len(m.new_files)], "rows_in": [rows]})
            rows = 0

    # these tasks write as they read (no shuffle in between), so the source's checks run first, alone
    source.write.format("noop").mode("overwrite").save()
    return source.mapInArrow(write, WRITTEN)
