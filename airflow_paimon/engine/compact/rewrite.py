"""Rewrite one bucket (Paimon's MergeTreeCompactTask): overlapping or small files are merged and written at
the output level; a large file that overlaps nothing is only re-levelled (same file, new level).

With ``changelog-producer=full-compaction`` (never with deletion vectors, as in Paimon) a compaction into the max
level is Paimon's FullChangelogMergeTreeCompactRewriter: every file below the max level is rewritten (none only
re-levelled), and each merged section emits its changelog against the rows the max level held
(engine/write/changelog_producers.py)."""
from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon.common.options.core_options import CoreOptions
from pypaimon.write.commit_message import CommitMessage

from airflow_paimon.engine.compact.levels import interval_partition
from airflow_paimon.engine.codec.kinds import retracts
from airflow_paimon.engine.codec.system_fields import VALUE_KIND, key_columns
from airflow_paimon.engine.merge.merge_function import lookup_merge_input, merge_key_values, retract_counts
from airflow_paimon.engine.compact.plan import BucketCompaction
from airflow_paimon.engine.merge.merge_engine import MergeRules
from airflow_paimon.engine.paimon_compat import roll_write
from airflow_paimon.engine.files.data_files import read_as, read_columns, without_rows
from airflow_paimon.engine.table.schema_evolution import file_column_names
from airflow_paimon.engine.codec.keys import encode_keys
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.write.bucket_writer import key_value_schema, write_changelog_files
from airflow_paimon.engine.write.changelog_producers import (emits_full_compaction_changelog,
                                                             full_compaction_changelog, sort_images)
from airflow_paimon.engine.write.kv_writer import KeyValueFileWriter

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

log = logging.getLogger(__name__)
COMPACT_FILE_SOURCE = 1  # DataFileMeta.file_source: 0 APPEND, 1 COMPACT


def min_file_size(table: FileStoreTable) -> int:
    """Files at least this big are re-levelled rather than rewritten (Paimon: 70% of target-file-size)."""
    return TableOptions.of(table).write.target_file_size // 10 * 7


class BucketRewriter:
    """Carries out one BucketCompaction; ``compact_before`` / ``compact_after`` hold the outcome."""

    def __init__(self, table: FileStoreTable, work: BucketCompaction):
        self.table, self.work = table, work
        self.schema = key_value_schema(table)
        self.key_columns = key_columns(table.trimmed_primary_keys)
        self.options = TableOptions.of(table)
        self.rules = MergeRules.of(self.options)
        self.compact_before: list = []
        self.compact_after: list = []
        self.changelog = emits_full_compaction_changelog(self.options.changelog_producer, work.output_level,
                                                         work.max_level)
        self._images: list[pa.Table] = []  # the changelog of each merged section
        self.compact_changelog: list = []
        self._written: list = []  # new files only: what an abort must delete

    def run(self) -> CommitMessage:
        try:
            self._compact(min_file_size(self.table))
            self._write_changelog()
        except Exception:
            self.abort()
            raise
        return CommitMessage(partition=tuple(self.work.partition), bucket=self.work.bucket, new_files=[],
                             compact_before=self.compact_before, compact_after=self.compact_after,
                             compact_changelog_files=self.compact_changelog)

    def abort(self) -> None:
        for meta in self._written:
            self.table.file_io.delete_quietly(self.work.paths.get(meta.file_name) or meta.file_path)
        self._written.clear()

    def _compact(self, min_size: int) -> None:
        candidate: list[list] = []
        for section in interval_partition(self.work.files):
            if len(section) > 1:
                candidate.append(section)
                continue
            f = section[0]
            if f.file_size < min_size:
                candidate.append([f])  # small files are rewritten along with their neighbours
            else:
                self._rewrite(candidate)
                self._upgrade(f)
        self._rewrite(candidate)

    def _rewrite(self, candidate: list[list]) -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            self._upgrade(candidate[0][0])
        else:
            self._merge_and_write([f for section in candidate for f in section])
        candidate.clear()

    def _upgrade(self, f) -> None:
        """Re-level a file that overlaps nothing; one with retractions is rewritten when going to the max
        level, where retractions must not survive."""
        level = self.work.output_level
        if f.file_name in self.work.deleted:  # its deletion vector goes with the compaction: rewrite without them
            self._merge_and_write([f])
            return
        if f.level == level:
            return
        if self.changelog:  # its rows reach the max level: rewritten, as Paimon does, to emit their +I
            self._merge_and_write([f])
            return
        kinds = self._read(f, [VALUE_KIND]).column(VALUE_KIND)
        retracted = int(pc.sum(retracts(kinds).cast(pa.int64())).as_py() or 0)
        if level == self.work.max_level and retracted and self.work.drop_delete:
            self._merge_and_write([f])
            return
        self.compact_before.append(f)
        self.compact_after.append(dataclasses.replace(f, level=level, delete_row_count=retracted))

    def _merge_and_write(self, files: list) -> None:
        stored = [self._read(f) for f in files]
        kv = (lookup_merge_input([(f.level, rows) for f, rows in zip(files, stored)], self.key_columns, self.rules)
              if self.options.compacts_level_0 else pa.concat_tables(stored))  # Paimon's LookupMergeFunction
        merged = merge_key_values(kv, self.key_columns, self.options, self.work.drop_delete,
                                  identifier=self.table.identifier.get_full_name(), rules=self.rules,
                                  primary_keys=list(self.table.primary_keys))
        if self.changelog:
            self._images.append(self._section_changelog(files, stored, merged))
        self.compact_before.extend(files)
        if merged.num_rows:
            self.compact_after.extend(self._write(merged))

    def _section_changelog(self, files: list, stored: list[pa.Table], merged: pa.Table) -> pa.Table:
        """The full-compaction changelog of one section: its max-level rows (what the previous full compaction
        emitted) against the merged result, for the keys that have a version below the max level."""
        top = [rows for f, rows in zip(files, stored) if f.level == self.work.max_level]
        below = [rows for f, rows in zip(files, stored) if f.level != self.work.max_level]
        touched = pa.concat_tables([self.schema.empty_table(), *below]).select(self.key_columns)
        return full_compaction_changelog(self.table, pa.concat_tables([self.schema.empty_table(), *top]), merged,
                                         encode_keys(touched, self.key_columns), self.options.merge.row_deduplicate)

    def _write_changelog(self) -> None:
        images = pa.concat_tables(self._images) if self._images else self.schema.empty_table()
        if not images.num_rows:
            return
        metas = write_changelog_files(self.table, self.work.partition, self.work.bucket,
                                      sort_images(images, self.key_columns))
        self._written.extend(metas)
        # labelled with the output level, as Paimon's changelog writer of a compaction does
        self.compact_changelog = [dataclasses.replace(m, level=self.work.output_level) for m in metas]

    def _write(self, kv: pa.Table) -> list:
        writer = KeyValueFileWriter(table=self.table, partition=tuple(self.work.partition), bucket=self.work.bucket,
                                    max_seq_number=0, options=CoreOptions.copy(self.table.options))
        try:
            roll_write(writer, kv)  # sorted, key-unique rows; pypaimon rolls them into files by size
        except Exception:
            writer.abort()
            raise
        metas = list(writer.committed_files)
        for m in metas:
            self.work.paths[m.file_name] = m.file_path
        self._written.extend(metas)
        retracts = retract_counts(kv, [m.row_count for m in metas])
        # Paimon writes compaction output at the output level directly; pypaimon's writer knows level 0 only.
        return [dataclasses.replace(m, level=self.work.output_level, file_source=COMPACT_FILE_SOURCE,
                                    delete_row_count=r) for m, r in zip(metas, retracts)]

    def _read(self, f, columns: list[str] | None = None) -> pa.Table:
        """A file's rows in the current schema: a file of an older schema (before columns were added or
        widened) is read by field id, added columns as nulls."""
        names = columns or self.schema.names
        target = pa.schema([self.schema.field(n) for n in names])
        if f.schema_id != self.table.table_schema.id:
            data = read_as(self.work.paths[f.file_name], target, file_column_names(self.table, f.schema_id))
        else:
            data = read_columns(self.work.paths[f.file_name], names).select(names).cast(target)
        return without_rows(data, self.work.deleted.get(f.file_name))  # rows a deletion vector marks


def rewrite_bucket(table: FileStoreTable, work: BucketCompaction) -> CommitMessage:
    """Compact one bucket; returns the CommitMessage with compact_before / compact_after."""
    message = BucketRewriter(table, work).run()
    log.info("bucket %s/%s: %s files -> %s files at level %s", work.partition, work.bucket,
             len(message.compact_before), len(message.compact_after), work.output_level)
    return message
