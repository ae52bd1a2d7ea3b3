"""One write task: one (partition, bucket)'s assigned rows in, one staged CommitMessage out.

Fixed- and dynamic-bucket rows arrive as the source had them, so duplicates of a key are merged here as
Paimon's write buffer would, under the table's MergeRules; cross-partition rows were merged by the assigner
already (its DELETEs of moved keys are written whatever ``ignore-delete`` says). Under aggregation
every record is written — the r-th record of a key in the r-th file, sequence numbers chained — so Paimon's
merge applies the table's aggregate functions. A dynamic-bucket write also refreshes the bucket's HASH index.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.assigner import BUCKET, ROW_KIND, ORDER
from airflow_paimon.engine.merge.rowkind import occurrence_rounds, resolve_duplicates
from airflow_paimon.engine.codec.kinds import is_retract
from airflow_paimon.engine.commit.staging import encode_message
from airflow_paimon.engine.write.context import WriteContext
from airflow_paimon.engine.codec.keys import encode_partitions
from airflow_paimon.engine.write.bucket_writer import write_bucket
from airflow_paimon.engine.write.lookup_compact import lookup_compact
from airflow_paimon.engine.write.force_up_level_0 import force_up_level_0
from pypaimon.write.commit_message import CommitMessage


def write_task(ctx: WriteContext, rows: pa.Table) -> tuple[bytes, dict]:
    """Write the rows of one (partition, bucket); returns (encoded CommitMessage, counters)."""
    table = ctx.table()
    bucket = int(rows.column(BUCKET)[0].as_py())
    partition = tuple(rows.column(k)[0].as_py() for k in ctx.partition_keys)
    encoded_partition = encode_partitions(rows.slice(0, 1), ctx.partition_keys)[0].as_py()
    if ORDER in rows.column_names:
        rows = rows.take(pc.sort_indices(rows.column(ORDER)))
    rules, pk = ctx.merge_rules, ctx.primary_keys
    kinds = np.asarray(rows.column(ROW_KIND).to_numpy(), dtype=np.int8)
    if rules.aggregates:
        if not ctx.shape.merged_upstream:  # Paimon's RowKindFilter (the assigner's rows passed it already)
            rows, kinds = rules.filter_row_kinds(rows, kinds)
        rounds = occurrence_rounds(rows, pk, list(rules.sequence_fields), rules.sequence_ascending)
    else:
        if not ctx.shape.merged_upstream:
            resolved = resolve_duplicates(rows, kinds, pk, rules, identifier=ctx.identifier)
            rows, kinds = resolved.rows, resolved.row_kinds
        rounds = np.zeros(rows.num_rows, dtype=np.int64)

    seq = first_seq = ctx.max_sequence_numbers.get((encoded_partition, bucket), -1)
    files: list = []
    changelog: list = []
    for r in range(int(rounds.max()) + 1 if len(rounds) else 0):
        for part in _level_0_files(rounds == r, kinds, ctx.deletion_vectors):
            part = pa.array(part)
            written = write_bucket(table, partition, bucket, rows.take(part), pa.array(kinds).take(part), seq,
                                   changelog=ctx.input_changelog)
            files, changelog, seq = files + written.new_files, changelog + written.changelog_files, seq + len(part)
    message = CommitMessage(partition=partition, bucket=bucket, new_files=files, changelog_files=changelog,
                            index_adds=ctx.shape.index_adds(ctx, partition, bucket, rows))
    # a partition overwrite replaces the bucket's old files where it writes a live row: nothing to look up
    retract = is_retract(kinds)
    replaced = ctx.write_mode == "overwrite" and not retract.all()
    files_at_base = [] if replaced else ctx.bucket_files.get((encoded_partition, bucket), [])
    if ctx.deletion_vectors:  # the level-0 files compacted up at once, old rows marked (engine/write/lookup_compact.py)
        lookup_compact(message, table, rules, ctx.base_snapshot(), files_at_base, ctx.num_levels, rows, kinds,
                       first_seq, changelog=ctx.lookup_changelog)
    elif ctx.compacts_level_0:  # changelog-producer lookup: level 0 compacted up, its lookup changelog emitted
        force_up_level_0(message, table, rules, files_at_base, ctx.num_levels, rows, kinds, first_seq,
                         changelog=ctx.lookup_changelog)
    deletes = int(retract.sum())
    counters = {"rows_written": rows.num_rows - deletes, "deletes": deletes, "files": len(message.new_files)}
    return encode_message(table, message), counters


def _level_0_files(in_round: np.ndarray, kinds: np.ndarray, deletion_vectors: bool) -> list[np.ndarray]:
    """The row indices of each level-0 file one round writes. A deletion-vector table writes its -U/-D rows to a
    file of their own: the file of live rows then holds exactly what its compact increment lifts, and is
    re-levelled rather than written again (engine/write/lookup_compact.py)."""
    rows = np.nonzero(in_round)[0]
    if not deletion_vectors:
        return [rows]
    retract = is_retract(kinds[rows])
    return [part for part in (rows[~retract], rows[retract]) if len(part)]
