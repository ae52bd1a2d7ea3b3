"""The two kinds Paimon writes as small integers, named once. They are different things:

- RowKind, a record's change: the ``_VALUE_KIND`` byte of a data file row, and as text ("+I", "-U", "+U", "-D")
  the operation column of a batch and the row-kind column of an incremental read. Taken from pypaimon's own
  ``RowKind``: +I = 0, -U = 1, +U = 2, -D = 3; -U and -D retract their key. No other module spells them.
- FileKind, a manifest entry's change to the table's files: ADD = 0, DELETE = 1 (Java Paimon's FileKind;
  pypaimon writes the bare integers).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.table.row.row_kind import RowKind

INSERT = RowKind.INSERT.value
UPDATE_BEFORE = RowKind.UPDATE_BEFORE.value
UPDATE_AFTER = RowKind.UPDATE_AFTER.value
DELETE = RowKind.DELETE.value
ROW_KINDS = {kind.to_string(): kind.value for kind in RowKind}  # "+I" -> 0, "-U" -> 1, "+U" -> 2, "-D" -> 3
RETRACT_KINDS = (UPDATE_BEFORE, DELETE)  # the row removes its key
# the same kinds as text
INSERT_TEXT = RowKind.INSERT.to_string()
UPDATE_BEFORE_TEXT = RowKind.UPDATE_BEFORE.to_string()
UPDATE_AFTER_TEXT = RowKind.UPDATE_AFTER.to_string()
DELETE_TEXT = RowKind.DELETE.to_string()
RETRACT_TEXTS = (UPDATE_BEFORE_TEXT, DELETE_TEXT)
_RETRACT_ARRAY = pa.array(RETRACT_KINDS, pa.int8())


def is_retract(kinds: np.ndarray) -> np.ndarray:
    """Per RowKind byte (numpy): whether it retracts its key (-U, -D)."""
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def retracts(kinds: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Per RowKind byte (Arrow, e.g. a ``_VALUE_KIND`` column): whether it retracts its key (-U, -D)."""
    return pc.is_in(kinds, _RETRACT_ARRAY)


class FileKind:
    """A manifest entry's kind (``ManifestEntry.kind``): not a RowKind, whose DELETE is 3."""

    ADD = 0
    DELETE = 1
