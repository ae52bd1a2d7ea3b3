"""pypaimon's KeyValueDataWriter, writing files as Java Paimon writes them:

- each file's ``delete_row_count`` is its -U/-D rows. pypaimon's writer records 0 for every file; a reader
  then takes a bucket holding one file as raw-convertible and returns that file's -D rows as live rows (e.g. a
  delete of a key that was never written, alone in a new dynamic bucket). pypaimon's PostponeDataWriter fixes
  the same thing the same way.
- DECIMAL(p ≤ 18) columns are stored as parquet INT32 / INT64 (the parquet spec's choice, and Java's).
  pyarrow's default, FIXED_LEN_BYTE_ARRAY, makes Java Paimon 1.0 fail on every read of the file
  (``PlainBinaryDictionary.decodeToLong``: its reader takes the physical type from the precision).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

from airflow_paimon.engine.codec.kinds import is_retract
from airflow_paimon.engine.codec.system_fields import VALUE_KIND


class KeyValueFileWriter(KeyValueDataWriter):
    """``level``: the LSM level its data files are written at (0 unless a deletion-vector write places its run
    higher, engine/write/lookup_compact.py)."""
    _retracts: int | None = None
    parquet_writer_options: dict[str, Any]

    def __init__(self, *args, level: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.level = level
        self.parquet_writer_options = {**self.parquet_writer_options, "store_decimal_as_integer": True}

    def _write_data_to_file(self, data: pa.Table):
        kinds = np.asarray(data.column(VALUE_KIND).to_numpy(), dtype=np.int8) if data.num_rows else np.zeros(0, np.int8)
        self._retracts = int(is_retract(kinds).sum())
        try:
            super()._write_data_to_file(data)
        finally:
            self._retracts = None

    def _create_data_file_meta(self, *args, **kwargs):
        meta = super()._create_data_file_meta(*args, **kwargs)
        if self._retracts is not None:
            meta.delete_row_count = self._retracts
            meta.level = self.level  # a data file (a changelog file's meta is made elsewhere, at level 0)
        return meta
