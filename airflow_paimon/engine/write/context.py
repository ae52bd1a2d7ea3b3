"""What every task of one write needs to know, computed once on the driver and shipped to the tasks."""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pypaimon.schema.data_types import PyarrowFieldParser

from airflow_paimon.engine import paimon_compat
from airflow_paimon.engine.files import storage
from airflow_paimon.engine.codec.keys import encode_partition_values
from airflow_paimon.engine.files.deletion_vectors import live_files_by_bucket
from airflow_paimon.engine.errors import TransientError
from airflow_paimon.engine.index.layout import base_manifest
from airflow_paimon.engine.merge.merge_engine import MergeRules
from airflow_paimon.engine.files.scan import buckets_at, live_entries
from airflow_paimon.engine.assign.shapes import TableShape, shape_of
from airflow_paimon.engine.table.table import get_table
from airflow_paimon.engine.options import IndexOptions, TableOptions


@functools.lru_cache(maxsize=8)
def cached_table(options_json: str, identifier: str, schema_id: int | None = None):
    """The table at the schema the driver planned with, opened once per process and schema: a Python worker
    that outlives one job (Spark reuses them) must not write a later job's files with another job's columns.
    A later schema that only grew the columns (another writer's evolution, engine/table/schema_evolution.py) is
    written past as a Paimon writer opened before it would: the files name the planned schema, readers map
    them by field id. A later schema with other keys or options refuses the job."""
    table = get_table(json.loads(options_json), identifier)
    if schema_id is None or table.table_schema.id == schema_id:
        return table
    planned = table.schema_manager.get_schema(schema_id)
    if planned is None or not _only_columns_grew(planned, table.table_schema):
        raise TransientError(f"table {identifier}: its schema changed to {table.table_schema.id} during this job "
                             f"(planned with schema {schema_id}); retry the task")
    return paimon_compat.table_at_schema(table, planned)


def _only_columns_grew(old, new) -> bool:
    return (old.primary_keys, old.partition_keys, old.options) == (new.primary_keys, new.partition_keys, new.options) \
        and {f.id for f in old.fields} <= {f.id for f in new.fields}


@dataclass
class WriteContext:
    catalog_options: dict
    identifier: str
    base_snapshot_id: int | None
    index_uri: str  # the table's index directory
    shards: int
    staging_uri: str = ""  # where this run stages its commit and index changes
    # (encoded partition, bucket) -> max sequence number of the bucket's live files at the base snapshot
    max_sequence_numbers: dict[tuple[str, int], int] = field(default_factory=dict)
    schema_id: int | None = None  # the table schema the driver planned with (None: the latest)
    write_mode: str = "upsert"  # or "overwrite" (engine/commit/overwrite.py)
    # deletion-vector tables: (encoded partition, bucket) -> its live files at the base snapshot
    bucket_files: dict[tuple[str, int], list] = field(default_factory=dict)
    # cross-partition: some bucket holds keys of several index shards (IndexManifest.shares_buckets)
    shared_buckets: bool = False

    @classmethod
    def plan(cls, spec, table, shape: TableShape, shards: int, staging_uri: str, write_mode: str) -> "WriteContext":
        """The context of one write (``spec``: its AssignWriteSpec, ``table`` at the schema it writes), whole: the
        base snapshot's buckets and, where the write compacts level 0, their live files, read once on the driver."""
        ctx = cls(spec.catalog_options, spec.table, spec.base_snapshot_id, spec.index_uri or "", shards,
                  staging_uri, schema_id=table.table_schema.id, write_mode=write_mode)
        shared_buckets = ctx.shared_buckets
        if shape.needs_index:
            shared_buckets = base_manifest(ctx.index_uri, ctx.base_snapshot_id).shares_buckets()
        entries = live_entries(table, ctx.base_snapshot())  # one manifest scan for both uses below
        max_sequence_numbers = {(encode_partition_values(b.partition, ctx.partition_types), b.bucket):
                                b.max_sequence_number for b in buckets_at(table, ctx.base_snapshot(), entries)}
        bucket_files = ctx.bucket_files
        if ctx.compacts_level_0:  # each write task looks up its bucket's old rows in these files
            bucket_files = live_files_by_bucket(table, ctx.base_snapshot(), ctx.partition_types, entries)
        return replace(ctx, shared_buckets=shared_buckets, max_sequence_numbers=max_sequence_numbers,
                       bucket_files=bucket_files)

    def __setstate__(self, state: dict) -> None:
        """Unpickled in a Python worker: its index, staging and data files use the connection's options."""
        self.__dict__.update(state)
        storage.configure(self.catalog_options)

    def table(self):
        """The table handle, opened once per Python worker."""
        return cached_table(json.dumps(self.catalog_options, sort_keys=True), self.identifier, self.schema_id)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.table().primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.table().partition_keys)

    @property
    def arrow_schema(self) -> pa.Schema:
        return PyarrowFieldParser.from_paimon_schema(self.table().table_schema.fields)

    def conform(self, rows: pa.Table) -> pa.Table:
        """``rows`` with the table's columns cast to the table's Arrow types (Spark may hand large_string)."""
        for f in self.arrow_schema:
            i = rows.schema.get_field_index(f.name)
            if rows.schema.field(i).type != f.type:
                rows = rows.set_column(i, f, rows.column(i).cast(f.type))
        return rows

    @property
    def partition_types(self) -> list[pa.DataType]:
        return [PyarrowFieldParser.from_paimon_type(f.type) for f in self.table().partition_keys_fields]

    @property
    def table_options(self) -> TableOptions:
        """The table's options, parsed once per option set (engine/options/)."""
        return TableOptions.of(self.table())

    @property
    def index_options(self) -> IndexOptions:
        return self.table_options.index

    @property
    def shape(self) -> TableShape:
        return shape_of(self.table())

    def base_snapshot(self):
        return self.table().snapshot_manager().get_snapshot_by_id(self.base_snapshot_id) \
            if self.base_snapshot_id else None

    @functools.cached_property
    def merge_rules(self) -> MergeRules:
        """The table's merge engine and its options, read once (per task process: the driver's copy travels)."""
        return MergeRules.of(self.table_options)

    @property
    def deletion_vectors(self) -> bool:
        """``deletion-vectors.enabled``: the write task looks up and marks old rows (engine/write/lookup_compact.py)."""
        return self.table_options.deletion_vectors

    @property
    def num_levels(self) -> int:
        return self.table_options.compaction.levels

    @property
    def input_changelog(self) -> bool:
        """Whether the writer writes changelog files: ``changelog-producer=input``, except for a partition
        overwrite, which commits no changelog (as in Paimon)."""
        return self.changelog_producer == "input" and self.write_mode != "overwrite"

    @property
    def lookup_changelog(self) -> bool:
        """Whether the write's compaction of level 0 emits Paimon's lookup changelog: ``changelog-producer=lookup``,
        except for a partition overwrite (Paimon's overwrite commits no changelog)."""
        return self.changelog_producer == "lookup" and self.write_mode != "overwrite"

    @property
    def changelog_producer(self) -> str:
        """The table's ``changelog-producer`` (``lookup``: emitted by the write's compaction of level 0)."""
        return self.table_options.changelog_producer

    @property
    def compacts_level_0(self) -> bool:
        """Whether a write's commit also compacts its level-0 files up (TableOptions.compacts_level_0)."""
        return self.table_options.compacts_level_0

    @property
    def one_writer_per_bucket(self) -> bool:
        """Whether a cross-partition write shuffles its assigned rows to one writer per (partition, bucket), as
        Paimon's does: always where the write compacts level 0 (that compaction needs the bucket's whole batch);
        where buckets are shared between shards, so a bucket gets one file per run rather than one per task."""
        return self.compacts_level_0 or self.shared_buckets

    @property
    def write_buffer_bytes(self) -> float:
        """The input a write task holds in memory before it spills (engine/write/buffer.py): Paimon's
        ``write-buffer-size``. A write that compacts level 0 holds all of it: that compaction needs each
        bucket's rows at once."""
        if self.compacts_level_0:
            return math.inf
        return self.table_options.write.buffer_bytes

    @property
    def target_row_num(self) -> int:
        return self.table_options.buckets.target_row_num
