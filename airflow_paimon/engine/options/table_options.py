"""``TableOptions``: a table's options, parsed once (per option set) against their declaration (declared.py), and
each subsystem's typed view of them (views.py). Every read of a table option goes through it
(tests/unit/project/test_option_reads.py)."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pypaimon.common.options.core_options import MergeEngine

from airflow_paimon.engine.options.declared import OPTIONS, declared
from airflow_paimon.engine.options.parse import default_of, given, parse, refuse
from airflow_paimon.engine.options.views import (BucketOptions, CompactOptions, ExpireOptions, IndexOptions,
                                                 ManifestMergeOptions, MergeOptions, WriteOptions)

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


class TableOptions:
    """The options of table ``identifier``: ``get(key)`` is the declared option's typed value (its default when
    unset), parsed on first use; ``check()`` parses every option checked with every table up front."""

    def __init__(self, identifier: str, options: dict | None):
        self.identifier = identifier
        self.raw = {str(k): str(v) for k, v in dict(options or {}).items() if v is not None}
        self._values: dict[str, Any] = {}

    @classmethod
    def parse(cls, identifier: str, options: dict | None) -> "TableOptions":
        """One object per (table, option set): the write, its tasks' merges and the commit parse them once."""
        return _parsed(identifier, tuple(sorted((str(k), str(v)) for k, v in dict(options or {}).items()
                                                if v is not None)))

    @classmethod
    def of(cls, table: FileStoreTable) -> "TableOptions":
        return cls.parse(table.identifier.get_full_name(), dict(table.table_schema.options))

    def given(self, key: str) -> str | None:
        """The option's own text; None when unset or blank."""
        return given(self.raw, key)

    def get(self, key: str):
        if key not in self._values:
            option = declared(key)
            # a fallback key is read when the key is not given, the first given wins (Paimon's fallback keys)
            present = next((k for k in ((key,) if option.pattern else option.keys) if self.given(k) is not None),
                           None)
            self._values[key] = (default_of(option) if present is None
                                 else parse(self.identifier, option, present, self.raw[present]))
        return self._values[key]

    def with_overrides(self, overrides: dict | None) -> "TableOptions":
        """These options, ``overrides`` (an operator's arguments; None: not given) winning."""
        given_ones = {k: str(v) for k, v in (overrides or {}).items() if v is not None}
        return TableOptions.parse(self.identifier, {**self.raw, **given_ones}) if given_ones else self

    def refuse(self, key: str, problem: str):
        """The ValidationError of ``key``'s value."""
        return refuse(self.identifier, key, self.raw.get(key), problem)

    def check(self) -> None:
        """Parse every option checked with every table, its fallback keys and per-field keys too, and the limits
        one option sets another; the first bad value fails naming the table, the option and the value."""
        for option in OPTIONS:
            if not option.eager:
                continue
            keys = sorted(k for k in self.raw if option.pattern.match(k)) if option.pattern else option.keys
            for key in keys:
                if self.given(key) is not None:
                    parse(self.identifier, option, key, self.raw[key])
        _ = self.expire  # snapshot.num-retained.max against .min

    @functools.cached_property
    def compaction(self) -> CompactOptions:
        every = self.get("full-compaction.delta-commits")
        if every is None and self.changelog_producer == "full-compaction":
            every = 1  # Paimon's default with that producer
        return CompactOptions(self.get("num-sorted-run.compaction-trigger"),
                              self.get("compaction.max-size-amplification-percent"), self.get("compaction.size-ratio"),
                              self.get("num-levels"), every)

    @functools.cached_property
    def index(self) -> IndexOptions:
        ttl_ms = self.get("cross-partition-upsert.index-ttl")
        return IndexOptions(self.get("rocksdb.block.cache-size"), self.get("rocksdb.writebuffer.size"),
                            None if ttl_ms is None else ttl_ms // 1000)

    @functools.cached_property
    def expire(self) -> ExpireOptions:
        result = ExpireOptions(self.get("snapshot.num-retained.min"), self.get("snapshot.num-retained.max"),
                               self.get("snapshot.time-retained"), self.get("snapshot.expire.limit"))
        if result.retain_max < result.retain_min:
            raise self.refuse("snapshot.num-retained.max",
                              f"must not be below snapshot.num-retained.min ({result.retain_min})")
        return result

    @functools.cached_property
    def manifest(self) -> ManifestMergeOptions:
        return ManifestMergeOptions(self.get("manifest.target-file-size"), self.get("manifest.merge-min-count"),
                                    self.get("manifest.full-compaction-threshold-size"))

    @functools.cached_property
    def buckets(self) -> BucketOptions:
        key = self.get("bucket-key")
        return BucketOptions(None if key is None else tuple(k.strip() for k in key.split(",")), self.get("bucket"),
                             self.get("bucket-function.type"), self.get("dynamic-bucket.target-row-num"),
                             self.get("dynamic-bucket.max-buckets"))

    @functools.cached_property
    def write(self) -> WriteOptions:
        """What a write task reads: its buffer, its changelog files' prefix, its data files' size."""
        return WriteOptions(*map(self.get, ("write-buffer-size", "changelog-file.prefix", "target-file-size")))

    @functools.cached_property
    def merge(self) -> MergeOptions:
        return MergeOptions(self.sequence_fields, self.get("sequence.field.sort-order") == "ascending",
                            MergeEngine(self.merge_engine), self.changelog_producer, self.get("ignore-delete"),
                            self.get("partial-update.remove-record-on-delete"),
                            self.get("changelog-producer.row-deduplicate"), self.sequence_groups)

    @property
    def merge_engine(self) -> str:
        """``merge-engine``, as Paimon spells it (deduplicate when unset)."""
        return self.get("merge-engine")

    @property
    def sequence_groups(self) -> tuple[str, ...]:
        """The ``fields.<name>.sequence-group`` keys given (sequence groups are not implemented here)."""
        return tuple(sorted(k for k in self.raw if k.startswith("fields.") and k.endswith(".sequence-group")))

    def aggregate_function(self, field: str) -> str | None:
        """Aggregation: ``fields.<field>.aggregate-function``, else ``fields.default-aggregate-function`` (None:
        neither is given)."""
        return self.get(f"fields.{field}.aggregate-function") or self.get("fields.default-aggregate-function")

    def ignore_retract(self, field: str) -> bool:
        """Aggregation: ``fields.<field>.ignore-retract``, the field ignores -U/-D."""
        return self.get(f"fields.{field}.ignore-retract")

    def partition_expiration(self, expiration_ms: int | None = None) -> int | None:
        """Partition expiry's age limit in ms: ``expiration_ms`` (an operator's argument) else
        ``partition.expiration-time`` (None: neither); ``partition.expiration-strategy`` is checked first (only
        values-time is implemented)."""
        self.get("partition.expiration-strategy")
        return expiration_ms if expiration_ms is not None else self.get("partition.expiration-time")

    @property
    def partition_timestamp(self) -> tuple[str | None, str | None]:
        """How partition expiry reads a partition's time: (``partition.timestamp-pattern``,
        ``partition.timestamp-formatter``)."""
        return self.get("partition.timestamp-pattern"), self.get("partition.timestamp-formatter")

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        """``sequence.field``, as Paimon splits it (trimmed, empty names dropped)."""
        raw = self.get("sequence.field")
        return tuple(f.strip() for f in (raw or "").split(",") if f.strip())

    @property
    def row_kind_field(self) -> str | None:
        """``rowkind.field``: the source column holding each row's kind (the job's ``row_kind_column`` wins)."""
        return self.get("rowkind.field")

    @property
    def changelog_producer(self) -> str:
        return self.get("changelog-producer")

    @property
    def deletion_vectors(self) -> bool:
        return self.get("deletion-vectors.enabled")

    @property
    def compacts_level_0(self) -> bool:
        """Whether a write's commit also compacts its level-0 files up (an APPEND then a COMPACT snapshot): in a
        deletion-vector table (readers skip level 0), with ``changelog-producer=lookup`` (Paimon's
        ForceUpLevel0Compaction, whose lookup emits the changelog), and under ``merge-engine=first-row``, whose
        batch readers skip level 0 too (Paimon's LookupStrategy.needLookup: its writers lift every write)."""
        return self.deletion_vectors or self.changelog_producer == "lookup" or self.merge_engine == "first-row"


@functools.lru_cache(maxsize=64)
def _parsed(identifier: str, items: tuple[tuple[str, str], ...]) -> TableOptions:
    return TableOptions(identifier, dict(items))
