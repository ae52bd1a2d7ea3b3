"""Paimon's bytes, columnar: what a row, a key and a data file look like on disk.

- kinds.py: the RowKind byte of a record (+I, -U, +U, -D) and the FileKind of a manifest entry (ADD, DELETE).
- system_fields.py: the system columns of a primary-key data file (``_KEY_`` columns, ``_SEQUENCE_NUMBER``,
  ``_VALUE_KIND``).
- binary_row.py, murmur.py: Paimon's BinaryRow bytes and their hash code (the fixed and dynamic bucket).
- keys.py: primary keys and partitions as bytes in RocksDB's order (the global key index).
"""
