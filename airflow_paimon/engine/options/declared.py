"""Every table option this provider reads, declared once as Paimon's CoreOptions declares them: key, kind, default
(as Paimon writes it: ``16 mb``, ``1 h``), range or allowed values, one line of what it does here.

docs/configuration.md's option table is ``markdown_table()`` (tests/unit/table/test_table_options.py compares them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pypaimon.common.options.core_options import MergeEngine

JAVA_INT_MAX = 2**31 - 1
MAX_DYNAMIC_BUCKETS = 32767 + 1  # bucket ids are Java shorts
MERGE_ENGINES = tuple(m.value for m in MergeEngine)  # every merge engine Paimon has
FILE_FORMATS = ("parquet", "orc")  # what engine/files/data_files.py reads back (index bootstrap, compaction)
# Paimon's changelog producers, all written here: 'input' by the writer (engine/write/bucket_writer.py), 'lookup' by
# a write's compaction of level 0 (engine/write/lookup_compact.py, engine/write/force_up_level_0.py),
# 'full-compaction' by every compaction into the max level (engine/compact/rewrite.py)
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
# the aggregation merge engine's field functions (``fields.<name>.aggregate-function``), as engine/merge/aggregate.py
# implements them: those it can retract first; a field without one takes DEFAULT_AGGREGATE_FUNCTION
DEFAULT_AGGREGATE_FUNCTION = "last_non_null_value"
AGGREGATE_ALIASES = {"first_not_null_value": "first_non_null_value"}  # Paimon's legacy name
RETRACTABLE_AGGREGATES = ("primary_key", "last_value", "last_non_null_value", "sum")
IMPLEMENTED_AGGREGATES = RETRACTABLE_AGGREGATES + ("first_value", "first_non_null_value", "product", "max", "min",
                                                  "bool_and", "bool_or")
NOT_IMPLEMENTED_AGGREGATES = ("listagg", "collect", "merge_map", "merge_map_with_keytime", "nested_update",
                              "nested_partial_update", "theta_sketch", "hll_sketch", "rbm32", "rbm64", "avg")

INT, MEMORY, DURATION, BOOL, ENUM, STRING = "int", "memory", "duration", "bool", "enum", "string"


@dataclass(frozen=True)
class Option:
    """One table option. ``default``: Paimon's text for it (None: unset). ``smallest``/``largest``/``others``: an
    int's range and the values outside it it also takes; ``allowed``: an enum's values. ``eager``: parsed with
    every table's options (engine/options/checks.py); else where it is read (rules that apply to some tables only,
    partition expiry). ``fallback_keys``: read when the key is absent, the first given wins (as in Paimon)."""
    key: str
    kind: str
    default: str | None
    description: str
    smallest: int | None = None
    largest: int | None = None
    others: tuple[int, ...] = ()
    allowed: tuple[str, ...] = ()
    range_text: str | None = None  # the range as its error and the docs say it, where the numbers say too little
    eager: bool = True
    fallback_keys: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.fallback_keys)

    @property
    def pattern(self) -> re.Pattern | None:
        """Per-field options (``fields.<name>.ignore-retract``): the keys they match."""
        if "<name>" not in self.key:
            return None
        return re.compile("^" + re.escape(self.key).replace(re.escape("<name>"), ".+") + "$")

    @property
    def range(self) -> str:
        """Its values as the error and the docs say them."""
        if self.range_text:
            return self.range_text
        if self.kind == ENUM:
            return ", ".join(self.allowed)
        if self.kind != INT or self.smallest is None:
            return ""
        span = f"{self.smallest}..{self.largest}" if self.largest is not None else f"at least {self.smallest}"
        return " or ".join([*(str(o) for o in self.others), span])


def _int(key, default, description, smallest=1, largest=None, **kw) -> Option:
    return Option(key, INT, default, description, smallest=smallest, largest=largest, **kw)


OPTIONS: tuple[Option, ...] = (
    # buckets
    _int("bucket", "-1", "-1: dynamic buckets (or cross-partition, or an append table); N: N fixed buckets",
         largest=JAVA_INT_MAX, others=(-1,),
         # 0 and -2 (postpone) are not written here
         range_text="-1 (dynamic) or at least 1 (fixed); postpone bucket (-2) is not written here"),
    Option("bucket-key", STRING, None, "the fixed-bucket key (a subset of the primary key without partition "
                                       "fields); default the primary key less the partition fields", eager=False),
    Option("bucket-function.type", ENUM, "default", "how a fixed bucket is computed from its key: Paimon's hash, "
                                                    "or mod of one INT/BIGINT key", allowed=("default", "mod"),
           eager=False),
    _int("dynamic-bucket.target-row-num", "200000", "keys per dynamic bucket before a new one is opened"),
    _int("dynamic-bucket.initial-buckets", None, "not used here; checked as Paimon checks it"),
    _int("dynamic-bucket.max-buckets", "-1", "most buckets of a dynamic-bucket partition (-1: no limit)",
         largest=MAX_DYNAMIC_BUCKETS, others=(-1,)),
    # merging
    Option("merge-engine", ENUM, "deduplicate", "how rows of one key merge (Table shapes)", allowed=MERGE_ENGINES,
           eager=False),
    Option("changelog-producer", ENUM, "none", "who writes the changelog: the writer (input), a write's compaction "
                                               "of level 0 (lookup), a compaction into the max level "
                                               "(full-compaction)", allowed=CHANGELOG_PRODUCERS, eager=False),
    Option("changelog-producer.row-deduplicate", BOOL, "false", "no -U/+U pair for a key whose value did not change"),
    Option("changelog-file.prefix", STRING, "changelog-", "the file name prefix of changelog files"),
    Option("sequence.field", STRING, None, "columns that order a key's rows before the sequence number", eager=False),
    Option("sequence.field.sort-order", ENUM, "ascending", "the order of sequence.field",
           allowed=("ascending", "descending"), eager=False),
    Option("ignore-delete", BOOL, "false", "drop every -U/-D before merging",
           fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")),
    Option("ignore-update-before", BOOL, "false", "true is refused: dropping only -U is not implemented"),
    Option("partial-update.remove-record-on-delete", BOOL, "false", "partial-update: a -D removes the row, a -U "
                                                                     "is ignored"),
    Option("aggregation.remove-record-on-delete", BOOL, "false", "true is refused by compaction (not implemented)"),
    Option("fields.<name>.aggregate-function", STRING, None, "aggregation: the field's aggregate function",
           eager=False),
    Option("fields.default-aggregate-function", STRING, None, "aggregation: the function of fields without their "
                                                              "own (else last_non_null_value)", eager=False),
    Option("fields.<name>.ignore-retract", BOOL, "false", "aggregation: the field ignores -U/-D"),
    Option("rowkind.field", STRING, None, "the source column that holds each row's kind (+I, -U, +U, -D)",
           eager=False),
    # deletion vectors
    Option("deletion-vectors.enabled", BOOL, "false", "a write marks replaced rows in deletion vectors and compacts "
                                                      "its level-0 files up"),
    # files and the write
    Option("file.format", ENUM, "parquet", "the data file format", allowed=FILE_FORMATS),
    Option("file.format.per.level", STRING, None, "a format per level (level:format, ...), parquet or orc",
           eager=False),
    Option("target-file-size", MEMORY, "128 mb", "the size a data file rolls over at (primary-key tables)"),
    # not Paimon's 256 mb: a Python worker holds several copies of a chunk while it assigns it (a 10M-row first
    # load, two workers: 2.4 GiB per task at 16 mb, 3.1 GiB at 64 mb, the same time)
    Option("write-buffer-size", MEMORY, "16 mb", "the input a write task holds in memory before it spills (not "
                                                 "Paimon's 256 mb)"),
    # the global key index
    Option("cross-partition-upsert.index-ttl", DURATION, None, "keys of the index not written for this long are "
                                                               "forgotten (unset: never)"),
    Option("rocksdb.block.cache-size", MEMORY, "128 mb", "the block cache of an index shard's RocksDB"),
    Option("rocksdb.writebuffer.size", MEMORY, "64 mb", "the write buffer of an index shard's RocksDB"),
    # compaction
    _int("num-sorted-run.compaction-trigger", "5", "sorted runs of a bucket that trigger a compaction"),
    _int("num-sorted-run.stop-trigger", None, "not used here; checked as Paimon checks it"),
    _int("compaction.max-size-amplification-percent", "200", "size amplification that compacts a bucket fully",
         smallest=0),
    _int("compaction.size-ratio", "1", "percent of size difference within which runs compact together",
         smallest=0),
    _int("num-levels", None, "LSM levels (unset: compaction trigger + 1)", smallest=2),
    _int("full-compaction.delta-commits", None, "every how many write commits a compaction is full (unset: when "
                                                "asked for; 1 with changelog-producer full-compaction)"),
    # manifests
    Option("manifest.target-file-size", MEMORY, "8 mb", "each commit merges small manifests up to this size"),
    _int("manifest.merge-min-count", "30", "the last small manifests are merged once there are this many"),
    Option("manifest.full-compaction-threshold-size", MEMORY, "16 mb", "once the manifests that must change add "
                                                                       "up to this, a commit rewrites them all"),
    # snapshot expiry
    _int("snapshot.num-retained.min", "10", "snapshots always kept"),
    _int("snapshot.num-retained.max", str(JAVA_INT_MAX), "snapshots kept at most, whatever their age"),
    Option("snapshot.time-retained", DURATION, "1 h", "snapshots younger than this are kept"),
    _int("snapshot.expire.limit", "50", "snapshots expired per run at most"),
    # partition expiry
    Option("partition.expiration-time", DURATION, None, "partitions older than this expire", eager=False),
    Option("partition.expiration-strategy", ENUM, "values-time", "a partition's time is read from its values",
           allowed=("values-time",), eager=False),
    Option("partition.timestamp-pattern", STRING, None, "how a partition's values make its time ($dt $hour:00:00; "
                                                        "unset: the first partition field)", eager=False),
    Option("partition.timestamp-formatter", STRING, None, "the format of that time (unset: yyyy-MM-dd[ HH:mm:ss])",
           eager=False),
)

BY_KEY = {o.key: o for o in OPTIONS}
BY_KEY.update({k: o for o in OPTIONS for k in o.fallback_keys})
PATTERNS = [o for o in OPTIONS if o.pattern is not None]


def declared(key: str) -> Option:
    """The declaration of ``key`` (a per-field key by its pattern); KeyError if none."""
    found = BY_KEY.get(key) or next((o for o in PATTERNS if o.pattern and o.pattern.match(key)), None)
    if found is None:
        raise KeyError(f"table option {key!r} is not declared (engine/options/declared.py)")
    return found


def markdown_table() -> str:
    """The option table of docs/configuration.md."""
    rows = ["| Option | Type | Default | What it does here |", "|---|---|---|---|"]
    for o in OPTIONS:
        kind = f"{o.kind}: {o.range}" if o.range and o.kind in (INT, ENUM) else o.kind
        keys = ", ".join(f"`{k}`" for k in o.keys)
        rows.append(f"| {keys} | {kind} | {'' if o.default is None else f'`{o.default}`'} | {o.description} |")
    return "\n".join(rows) + "\n"
