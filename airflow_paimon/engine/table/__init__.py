"""A table's metadata and schema: the catalog (catalog.py), a table's handle, opened or created from a declared
schema (table.py), ALTER TABLE's rules (table_alter.py), schema evolution on write (schema_evolution.py), the
schema file created exclusively (schema_commit.py), and the lifecycle without Spark: create, alter, tag
(lifecycle.py)."""
