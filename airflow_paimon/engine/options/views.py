"""Each subsystem's typed view of a table's options (built by TableOptions, engine/options/table_options.py); the
defaults are the declared ones (engine/options/declared.py), so a view built by hand (in a test) matches an unset
option."""
from __future__ import annotations

from dataclasses import dataclass

from pypaimon.common.options.core_options import MergeEngine

from airflow_paimon.engine.options.declared import BY_KEY
from airflow_paimon.engine.options.parse import default_of


def default(key: str):
    return default_of(BY_KEY[key])


@dataclass(frozen=True)
class CompactOptions:
    """What steers compaction (engine/compact/)."""
    num_sorted_run_compaction_trigger: int = default("num-sorted-run.compaction-trigger")
    max_size_amplification_percent: int = default("compaction.max-size-amplification-percent")
    size_ratio: int = default("compaction.size-ratio")
    num_levels: int | None = default("num-levels")  # Paimon: trigger + 1 when unset
    # every how many write commits a compaction is full; None: only when asked for
    full_compaction_delta_commits: int | None = default("full-compaction.delta-commits")

    @property
    def levels(self) -> int:
        return self.num_levels if self.num_levels is not None else self.num_sorted_run_compaction_trigger + 1


@dataclass(frozen=True)
class IndexOptions:
    """The global key index: RocksDB sizing (Paimon's ``rocksdb.*``) and ``cross-partition-upsert.index-ttl``."""
    block_cache_bytes: int = default("rocksdb.block.cache-size")
    write_buffer_bytes: int = default("rocksdb.writebuffer.size")
    ttl_seconds: int | None = None


@dataclass(frozen=True)
class ExpireOptions:
    """Snapshot expiry (engine/maintenance/expire.py)."""
    retain_min: int = default("snapshot.num-retained.min")
    retain_max: int = default("snapshot.num-retained.max")
    time_retained_ms: int = default("snapshot.time-retained")
    limit: int = default("snapshot.expire.limit")


@dataclass(frozen=True)
class ManifestMergeOptions:
    """Manifest merging in every commit (engine/commit/manifest_merge.py)."""
    target_size: int = default("manifest.target-file-size")
    min_count: int = default("manifest.merge-min-count")
    full_compaction_size: int = default("manifest.full-compaction-threshold-size")


@dataclass(frozen=True)
class BucketOptions:
    """How keys go to buckets (engine/assign/)."""
    bucket_key: tuple[str, ...] | None = None  # as declared; None: the primary key less the partition fields
    bucket: int = default("bucket")
    function: str = default("bucket-function.type")
    target_row_num: int = default("dynamic-bucket.target-row-num")
    max_buckets: int = default("dynamic-bucket.max-buckets")


@dataclass(frozen=True)
class WriteOptions:
    """What a write task needs beyond the merge (engine/write/, engine/write/context.py)."""
    buffer_bytes: int = default("write-buffer-size")  # the input a write task holds before it spills
    changelog_file_prefix: str = default("changelog-file.prefix")
    target_file_size: int = default("target-file-size")  # a primary-key table's data files roll over at it


@dataclass(frozen=True)
class MergeOptions:
    """How a key's rows merge and what changelog they make (engine/merge/, engine/write/)."""
    sequence_fields: tuple[str, ...] = ()  # ``sequence.field``: merge order before the sequence number
    sequence_ascending: bool = True
    engine: MergeEngine = MergeEngine(default("merge-engine"))
    changelog_producer: str = default("changelog-producer")
    ignore_delete: bool = default("ignore-delete")  # Paimon's RowKindFilter
    remove_record_on_delete: bool = default("partial-update.remove-record-on-delete")
    row_deduplicate: bool = default("changelog-producer.row-deduplicate")
    sequence_groups: tuple[str, ...] = ()  # ``fields.<name>.sequence-group`` keys given (not implemented here)
