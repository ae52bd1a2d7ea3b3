"""Write one bucket's rows as sorted key-value data files through pypaimon's KeyValueDataWriter.

The rows of one bucket arrive already unique per key (the assigner resolved duplicates), so we build the
key-value layout columnar — _KEY_ columns, _SEQUENCE_NUMBER above the bucket's current maximum,
_VALUE_KIND — and hand it to pypaimon's roll-writer, which writes the files and their metadata (with each file's
delete_row_count, see kv_writer).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.common.options.core_options import ChangelogProducer, CoreOptions
from pypaimon.write.commit_message import CommitMessage

from airflow_paimon.engine.codec.system_fields import SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD, key_column, key_columns
from airflow_paimon.engine.errors import InternalError
from airflow_paimon.engine.paimon_compat import roll_write
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.files.data_files import is_last_of_key
from airflow_paimon.engine.write.kv_writer import KeyValueFileWriter

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def key_value_layout(table: FileStoreTable, rows: pa.Table, kinds: pa.Array, max_sequence_number: int) -> pa.Table:
    """Rows (the table's columns) sorted by key, with Paimon's system columns in front."""
    keys = list(table.trimmed_primary_keys)
    order = pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in keys], null_placement="at_start")
    rows, kinds = rows.take(order), kinds.take(order)
    n = rows.num_rows
    arrays, fields = [], []
    for k in keys:
        f = rows.schema.field(k)
        arrays.append(rows.column(k))
        fields.append(pa.field(key_column(k), f.type, nullable=f.nullable))
    arrays.append(pa.array(np.arange(max_sequence_number + 1, max_sequence_number + 1 + n, dtype=np.int64)))
    fields.append(SEQUENCE_NUMBER_FIELD)
    arrays.append(kinds.cast(pa.int8()))
    fields.append(VALUE_KIND_FIELD)
    for f in rows.schema:
        arrays.append(rows.column(f.name))
        fields.append(f)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_bucket(table: FileStoreTable, partition: tuple, bucket: int, rows: pa.Table, kinds: pa.Array,
                 max_sequence_number: int, changelog: bool = False, level: int = 0) -> CommitMessage:
    """Write the rows of one (partition, bucket); returns the CommitMessage that adds the new files.
    ``changelog``: Paimon's ``changelog-producer=input`` — pypaimon's writer writes each data file's rows (with
    their row kinds) once more as a changelog file, which the commit registers in the snapshot's changelog."""
    rows = rows.select(list(table.field_names)).cast(file_schema(table))
    kv = key_value_layout(table, rows, kinds, max_sequence_number)
    return write_key_values(table, partition, bucket, kv, changelog=changelog, level=level)


def write_key_values(table: FileStoreTable, partition: tuple, bucket: int, kv: pa.Table, changelog: bool = False,
                     level: int = 0) -> CommitMessage:
    """Write rows already in the key-value layout (sorted by key, one row per key, sequence numbers set) as files
    at ``level``; returns the CommitMessage that adds them."""
    _check_unique(table, kv)
    writer = KeyValueFileWriter(table=table, partition=tuple(partition), bucket=bucket,
                                max_seq_number=0, options=CoreOptions.copy(table.options), level=level,
                                changelog_producer=ChangelogProducer.INPUT if changelog else ChangelogProducer.NONE)
    return _roll(writer, partition, bucket, kv)


def write_changelog_files(table: FileStoreTable, partition: tuple, bucket: int, kv: pa.Table) -> list:
    """Changelog records in the key-value layout (a key may appear twice: -U then +U) written as changelog files,
    named as Paimon names them (``changelog-file.prefix``, default ``changelog-``); their metadata."""
    options = CoreOptions.copy(table.options)
    options.set(CoreOptions.DATA_FILE_PREFIX, TableOptions.of(table).write.changelog_file_prefix)
    writer = KeyValueFileWriter(table=table, partition=tuple(partition), bucket=bucket, max_seq_number=0,
                                options=options)
    return _roll(writer, partition, bucket, kv).new_files


def _roll(writer, partition: tuple, bucket: int, kv: pa.Table) -> CommitMessage:
    try:
        roll_write(writer, kv)  # pypaimon's size-based roll of sorted rows into files
    except Exception:
        writer.abort()
        raise
    return CommitMessage(partition=tuple(partition), bucket=bucket, new_files=list(writer.committed_files),
                         changelog_files=list(writer.committed_changelog_files))


def key_value_schema(table: FileStoreTable) -> pa.Schema:
    """The physical layout of a primary-key data file (what key_value_layout builds): _KEY_ columns, sequence
    number, value kind, row."""
    row = file_schema(table)
    keys = [pa.field(key_column(k), row.field(k).type, nullable=False) for k in table.trimmed_primary_keys]
    return pa.schema(keys + [SEQUENCE_NUMBER_FIELD, VALUE_KIND_FIELD, *row])


def file_schema(table: FileStoreTable) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def _check_unique(table: FileStoreTable, kv: pa.Table) -> None:
    """Rows are sorted by key: a key written twice would sit next to itself."""
    if kv.num_rows < 2:
        return
    duplicates = kv.num_rows - pc.sum(is_last_of_key(kv, key_columns(table.trimmed_primary_keys))
                                      .cast(pa.int64())).as_py()
    if duplicates:
        raise InternalError(f"table {table.identifier.get_full_name()}: {duplicates} duplicate keys in one bucket "
                             "write; the assigner must resolve duplicates first")
