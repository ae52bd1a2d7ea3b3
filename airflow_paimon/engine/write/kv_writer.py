"""pypaimon's KeyValueDataWriter, with each file's ``delete_row_count`` set to its -U/-D rows as Java does.

pypaimon's writer records 0 for every file; a reader then takes a bucket holding one file as
raw-convertible and returns that file's -D rows as live rows (e.g. a delete of a key that was never
written, alone in a new dynamic bucket). pypaimon's PostponeDataWriter fixes the same thing the same way.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pypaimon.write.writer.key_value_data_writer import KeyValueDataWriter

from airflow_paimon.engine.data_files import RETRACT_KINDS


class KeyValueFileWriter(KeyValueDataWriter):
    _retracts: int | None = None

    def _write_data_to_file(self, data: pa.Table):
        kinds = np.asarray(data.column("_VALUE_KIND").to_numpy(), dtype=np.int8) if data.num_rows else []
        self._retracts = int(np.isin(kinds, RETRACT_KINDS).sum())
        try:
            super()._write_data_to_file(data)
        finally:
            self._retracts = None

    def _create_data_file_meta(self, *args, **kwargs):
        meta = super()._create_data_file_meta(*args, **kwargs)
        if self._retracts is not None:
            meta.delete_row_count = self._retracts
        return meta
