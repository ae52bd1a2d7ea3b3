"""incremental_read on Spark: the driver finds the partitions whose files changed between two snapshots (or,
in changelog mode, the partitions with changelog files in the range), one Spark task per partition diffs it
(engine/read/incremental.py) or reads its changelog (engine/read/changelog_read.py) and writes one parquet file; the
driver returns the counts."""
from __future__ import annotations

import io
import json
import logging
import re

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.codec.kinds import DELETE_TEXT, INSERT_TEXT, UPDATE_AFTER_TEXT, UPDATE_BEFORE_TEXT
from airflow_paimon.engine.write.context import cached_table
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.read.changelog_read import changelog_rows, plan_changelog
from airflow_paimon.engine.read.incremental import (ROW_KIND_COLUMN, diff_partition, plan_incremental, scan_mode_of,
                                               snapshot_range, start_after)
from airflow_paimon.engine.jobs.specs import IncrementalReadResult, IncrementalReadSpec
from airflow_paimon.engine.table.table import get_table

log = logging.getLogger(__name__)
PART = re.compile(r"^part-\d{5}\.parquet$")
COUNTS = "file string, rows long, inserts long, update_befores long, updates long, deletes long"
KIND_COUNTS = {"inserts": INSERT_TEXT, "update_befores": UPDATE_BEFORE_TEXT, "updates": UPDATE_AFTER_TEXT,
               "deletes": DELETE_TEXT}


def part_name(i: int) -> str:
    return f"part-{i:05d}.parquet"


def write_parquet(uri: str, rows: pa.Table) -> None:
    buffer = io.BytesIO()
    pq.write_table(rows, buffer)
    storage.write_bytes_atomic(uri, buffer.getvalue())


def run_incremental_read(spark, spec: IncrementalReadSpec) -> IncrementalReadResult:
    identifier, target = spec.table, spec.target.rstrip("/")
    table = get_table(spec.catalog_options, identifier)
    start, rolled_back_from = start_after(table, identifier, spec.start_snapshot_id, spec.start_snapshot)
    start, end = snapshot_range(table, identifier, start, spec.end_snapshot_id)
    row_kind = spec.row_kind_column or ROW_KIND_COLUMN
    if row_kind in {f.name for f in table.table_schema.fields}:
        raise ValidationError(identifier, "row_kind_column is a column of the table; choose another name",
                              column=row_kind)
    mode = scan_mode_of(table, identifier, spec.scan_mode)
    work = plan_changelog(table, start, end) if mode == "changelog" else plan_incremental(table, start, end)
    rows_of = changelog_rows if mode == "changelog" else diff_partition
    options_json, schema_id = json.dumps(spec.catalog_options, sort_keys=True), table.table_schema.id

    def diff(batches):
        t = cached_table(options_json, identifier, schema_id)  # as planned: a reused worker's may be older
        for batch in batches:
            for i in batch.column(0).to_pylist():
                rows = rows_of(t, work[i], row_kind)
                write_parquet(storage.join(target, part_name(i)), rows)
                kinds = rows.column(row_kind)
                counts = {k: int(pa.compute.sum(pa.compute.equal(kinds, v)).as_py() or 0)
                          for k, v in KIND_COUNTS.items()}
                yield pa.RecordBatch.from_pylist([{"file": part_name(i), "rows": rows.num_rows, **counts}])

    written = [r.asDict() for r in spark.range(len(work), numPartitions=max(1, len(work)))
               .mapInArrow(diff, COUNTS).collect()] if work else []
    if not written:  # an empty increment is still a readable parquet source (with the schema)
        from airflow_paimon.engine.read.incremental import bucket_rows
        empty = bucket_rows(table, ())
        write_parquet(storage.join(target, part_name(0)),
                      empty.append_column(row_kind, pa.array([], pa.string())))
        written = [{"file": part_name(0), "rows": 0, **dict.fromkeys(KIND_COUNTS, 0)}]
    # A retry, or an earlier run into the same target, may have left parts this result does not have
    produced = {w["file"] for w in written}
    for name in storage.list_dir(target):
        if PART.match(name) and name not in produced:
            storage.delete_file_within(target, storage.join(target, name))
    result = IncrementalReadResult(table=identifier, start_snapshot_id=start, end_snapshot_id=end, target=target,
                                   row_kind_column=row_kind, changed_partitions=len(work), files=len(written),
                                   scan_mode=mode, rolled_back_from=rolled_back_from,
                                   **{k: sum(w[k] for w in written) for k in ("rows", *KIND_COUNTS)})
    log.debug("incremental read of %s (%d, %d]: %s", identifier, start, end, result)
    return result
