"""The system columns of a primary-key data file, as Paimon names them (pypaimon's ``SpecialFields``):
``_KEY_<k>`` (a copy of each primary-key column), ``_SEQUENCE_NUMBER`` (BIGINT), ``_VALUE_KIND`` (TINYINT, the
RowKind byte: codec/kinds.py), then the table's columns."""
from __future__ import annotations

import pyarrow as pa
from pypaimon.table.special_fields import SpecialFields

SEQUENCE_NUMBER = SpecialFields.SEQUENCE_NUMBER.name
VALUE_KIND = SpecialFields.VALUE_KIND.name
KEY_PREFIX = "_KEY_"  # pypaimon.read.split_read.KEY_PREFIX (checked in tests/unit/project/test_paimon_compat.py)
SEQUENCE_NUMBER_FIELD = pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False)
VALUE_KIND_FIELD = pa.field(VALUE_KIND, pa.int8(), nullable=False)


def key_column(name: str) -> str:
    """The data file column holding primary-key column ``name``."""
    return KEY_PREFIX + name


def key_columns(names) -> list[str]:
    return [key_column(n) for n in names]


def is_key_column(column: str) -> bool:
    return column.startswith(KEY_PREFIX)


def value_column(column: str) -> str:
    """The table column a ``_KEY_`` column copies (``_KEY_id`` -> ``id``)."""
    return column[len(KEY_PREFIX):]
