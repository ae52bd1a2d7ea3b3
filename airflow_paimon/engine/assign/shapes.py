"""How a table's rows find their bucket: one TableShape per bucket mode, holding all that differs between modes —
its table checks, whether bootstrap-index builds the global key index for it, the write modes it takes, the
shard (assigner) count a write uses, whether its assigner merges each key upstream of the write task, and the
index files a write task adds. Read once per table with ``shape_of(table)``.

``name`` is Paimon's BucketMode name. A table without a primary key is APPEND here whatever its ``bucket``:
pypaimon's own writer writes it. The executors key their per-shape pipelines by ``name``
(spark/pipelines/PIPELINES; tests/local_runner.py): the engine imports no executor.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_paimon.engine.assign.dynamic import bucket_index_update, check_dynamic_table, key_hashes
from airflow_paimon.engine.assign.fixed import check_fixed_table
from airflow_paimon.engine.errors import IndexGoneError, RolledBackError, ValidationError
from airflow_paimon.engine.index.layout import read_manifest

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


class TableShape:
    name = ""                   # Paimon's BucketMode name; the UI shows it
    label = ""                  # the shape in messages
    needs_index = False         # bootstrap-index builds the global key index (otherwise its decision is not_needed)
    merged_upstream = False     # the assigner merged each key's records before the write task
    write_modes: tuple[str, ...] = ("upsert",)   # engine/commit/overwrite.py WRITE_MODES this shape takes

    def check(self, table: FileStoreTable) -> None:
        """Refuse a table this shape's writer cannot write (options: engine/options/checks.py)."""

    def write_shards(self, table: FileStoreTable, spec) -> int:
        """Refuse what this write cannot do, before the source is read; the shard / assigner count it uses."""
        self.check(table)
        return 1

    def index_adds(self, ctx, partition: tuple, bucket: int, rows) -> list:
        """The index files a write task of ``ctx`` (engine/write/context.py) commits with its bucket's data files."""
        return []

    def __repr__(self) -> str:
        return self.name


class FixedBucket(TableShape):
    """bucket > 0: the bucket is a hash of the bucket key (engine/assign/fixed.py); no index."""
    name, label = "HASH_FIXED", "fixed-bucket"
    write_modes = ("upsert", "overwrite")

    def check(self, table: FileStoreTable) -> None:
        check_fixed_table(table)


class DynamicBucket(TableShape):
    """bucket -1, the key holds every partition field: Paimon's HASH index per bucket (engine/assign/dynamic.py),
    kept by the write tasks; ``spec.shards`` assigners."""
    name, label = "HASH_DYNAMIC", "dynamic-bucket"

    def check(self, table: FileStoreTable) -> None:
        check_dynamic_table(table)

    def write_shards(self, table: FileStoreTable, spec) -> int:
        self.check(table)
        return max(1, int(spec.shards or 1))

    def index_adds(self, ctx, partition: tuple, bucket: int, rows) -> list:
        table = ctx.table()
        return bucket_index_update(table, ctx.base_snapshot(), partition, bucket, key_hashes(table, rows))


class CrossPartition(TableShape):
    """bucket -1, the key lacks a partition field: the global key index, one assigner per index shard, which
    merges each key's records (and deletes moved keys) before writing."""
    name, label = "CROSS_PARTITION", "cross-partition"
    needs_index = True
    merged_upstream = True
    write_modes = ("upsert", "overwrite")

    def write_shards(self, table: FileStoreTable, spec) -> int:
        manifest = read_manifest(spec.index_uri, spec.base_snapshot_id) if spec.index_uri else None
        if manifest is None:
            raise IndexGoneError(f"table {spec.table}: no published index at {spec.index_uri} for snapshot "
                                 f"{spec.base_snapshot_id} (removed as an old index, or never published); nothing "
                                 "written, re-run from bootstrap-index")
        if None not in (manifest.snapshot_fingerprint, spec.base_snapshot_fingerprint) \
                and manifest.snapshot_fingerprint != spec.base_snapshot_fingerprint:
            raise RolledBackError(f"table {spec.table}: the published index of snapshot {spec.base_snapshot_id} is "
                                  "of another snapshot with that id (a rollback); re-run from bootstrap-index")
        return manifest.shards


class Append(TableShape):
    """No primary key: appended by pypaimon's own writer."""
    name, label = "APPEND", "append-only"

    def write_shards(self, table: FileStoreTable, spec) -> int:
        if spec.row_kind_column:
            raise ValidationError(spec.table, "an append-only table takes no row kinds (no primary key)",
                                  column=spec.row_kind_column)
        return 1


class Postpone(TableShape):
    """bucket -2: not written here."""
    name, label = "POSTPONE_MODE", "postpone-bucket"

    def check(self, table: FileStoreTable) -> None:
        raise ValidationError(table.identifier.get_full_name(), f"bucket mode {self.name} is not supported (use "
                                                                "bucket -1 or a fixed bucket count)")


HASH_FIXED, HASH_DYNAMIC, CROSS_PARTITION = FixedBucket(), DynamicBucket(), CrossPartition()
APPEND, POSTPONE = Append(), Postpone()
SHAPES = {s.name: s for s in (CROSS_PARTITION, HASH_DYNAMIC, HASH_FIXED, APPEND, POSTPONE)}


def shape_of(table: FileStoreTable) -> TableShape:
    """The shape of a pypaimon table (``table.bucket_mode()`` has no str(): its ``.name`` is read)."""
    if not table.primary_keys:
        return APPEND
    return SHAPES[table.bucket_mode().name]


def shapes_taking(write_mode: str) -> list[TableShape]:
    return [s for s in SHAPES.values() if write_mode in s.write_modes]
