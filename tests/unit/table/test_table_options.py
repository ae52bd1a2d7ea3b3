"""Table options (engine/options/checks.py): every option the provider acts on is parsed up front and every
Paimon option it does not implement is refused — a declared one before the table is created, an existing
table's own (set by another engine) before a bootstrap, write or compaction stages or commits anything."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options import OPTIONS, TableOptions, markdown_table
from airflow_paimon.engine.jobs.specs import BootstrapResult
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import Bootstrapped, Pipeline, bootstrap, compact, upsert, write_run
from oracle import assert_table_equals, expected_upsert

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"], ["s", "BIGINT"]]
SHAPES = {  # primary keys, partition keys, bucket
    "fixed": (["id"], [], "2"),
    "fixed-partitioned": (["id", "dt"], ["dt"], "2"),
    "dynamic": (["id", "dt"], ["dt"], "-1"),
    "cross-partition": (["id"], ["dt"], "-1"),
    "append": ([], [], "-1"),
}


def spec(shape: str, options: dict) -> TableSpec:
    pk, partitions, bucket = SHAPES[shape]
    return TableSpec.from_dict({"columns": COLUMNS, "primary_keys": pk, "partition_keys": partitions,
                                "options": {"bucket": bucket, **options}})


def batch(seed: int, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": rng.choice(100, n, replace=False).astype("int64"), "dt": rng.choice(list("ab"), n),
                         "v": rng.random(n).round(6), "s": rng.integers(0, 1000, n).astype("int64")})


def arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, schema=spec("fixed", {}).arrow_schema(), preserve_index=False)


def files_under(path: str) -> dict[str, int]:
    """Every file below ``path`` with its size: what 'unchanged' is checked against."""
    return {os.path.join(d, f): os.path.getsize(os.path.join(d, f))
            for d, _, names in os.walk(path) for f in names}


# ---------------------------------------------------------------- declared: refused before create_table

REFUSED = [
    # unimplemented ways of writing
    ("fixed", {"changelog-producer": "full-lookup"}, "changelog-producer", "full-lookup",
     "supported: none, input, lookup, full-compaction"),
    ("fixed", {"merge-engine": "first-row", "changelog-producer": "full-compaction"}, "changelog-producer",
     "full-compaction", "first-row takes only 'none' or 'lookup'"),
    ("fixed", {"merge-engine": "first-row", "changelog-producer": "input"}, "changelog-producer", "input",
     "first-row takes only 'none' or 'lookup'"),
    ("fixed", {"merge-engine": "first-row", "deletion-vectors.enabled": "true"}, "deletion-vectors.enabled", "true",
     "cannot be used with merge-engine first-row"),
    ("fixed", {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"}, "changelog-producer",
     "full-compaction", "cannot be used with deletion vectors"),
    ("fixed", {"changelog-producer": "full-compaction", "changelog-producer.row-deduplicate-ignore-fields": "v"},
     "changelog-producer.row-deduplicate-ignore-fields", "v", "not implemented"),
    ("fixed", {"changelog-producer.row-deduplicate": "yes"}, "changelog-producer.row-deduplicate", "yes",
     "true or false"),
    ("append", {"changelog-producer": "input"}, "changelog-producer", "input", "needs a primary key"),
    ("fixed", {"bucket": "-2"}, "bucket", "-2", "postpone bucket (-2) is not written here"),
    ("fixed", {"bucket": "0"}, "bucket", "0", "-1 (dynamic) or at least 1"),
    ("cross-partition", {"bucket": "4"}, "bucket", "4", "must be -1 for a cross-partition table"),
    ("fixed", {"merge-engine": "bogus"}, "merge-engine", "bogus", "supported: deduplicate, partial-update"),
    ("fixed", {"ignore-update-before": "true"}, "ignore-update-before", "true", "not implemented"),
    ("fixed", {"file.format": "avro"}, "file.format", "avro", "supported: parquet, orc"),
    ("fixed", {"file.format.per.level": "0:avro"}, "file.format.per.level", "0:avro", "parquet, orc"),
    ("fixed", {"merge-engine": "partial-update", "fields.v.sequence-group": "s"}, "fields.v.sequence-group", "s",
     "sequence groups or aggregate functions is not implemented"),
    ("fixed", {"merge-engine": "partial-update", "fields.v.aggregate-function": "sum"},
     "fields.v.aggregate-function", "sum", "not implemented"),
    ("fixed", {"merge-engine": "partial-update", "fields.default-aggregate-function": "sum"},
     "fields.default-aggregate-function", "sum", "not implemented"),
    # sequence.field as Paimon's SchemaValidation allows it
    ("cross-partition", {"sequence.field": "s"}, "sequence.field", "s", "cross-partition table"),
    ("fixed", {"merge-engine": "first-row", "sequence.field": "s"}, "sequence.field", "s", "first-row"),
    ("fixed", {"sequence.field": "nope"}, "sequence.field", "nope", "not a column"),
    ("fixed", {"sequence.field.sort-order": "sideways"}, "sequence.field.sort-order", "sideways", "ascending"),
    # bucket keys
    ("dynamic", {"bucket-key": "id"}, "bucket-key", "id", "cannot be set with bucket -1"),
    ("fixed-partitioned", {"bucket-key": "dt"}, "bucket-key", "dt", "partition field"),
    ("fixed", {"bucket-key": "s"}, "bucket-key", "s", "subset of the primary key"),
    ("fixed", {"bucket-function.type": "hive"}, "bucket-function.type", "hive", "supported: default, mod"),
    # values this provider parses: durations, memory sizes, integers with ranges, booleans
    ("cross-partition", {"cross-partition-upsert.index-ttl": "forever"}, "cross-partition-upsert.index-ttl",
     "forever", "not a duration"),
    ("cross-partition", {"rocksdb.block.cache-size": "lots"}, "rocksdb.block.cache-size", "lots",
     "not a memory size"),
    ("cross-partition", {"rocksdb.writebuffer.size": "0 mb"}, "rocksdb.writebuffer.size", "0 mb", "at least 1"),
    ("fixed", {"target-file-size": "big"}, "target-file-size", "big", "not a memory size"),
    ("cross-partition", {"write-buffer-size": "a lot"}, "write-buffer-size", "a lot", "not a memory size"),
    ("fixed", {"snapshot.time-retained": "soon"}, "snapshot.time-retained", "soon", "not a duration"),
    ("fixed", {"snapshot.num-retained.min": "-3"}, "snapshot.num-retained.min", "-3", "at least 1"),
    ("fixed", {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"}, "snapshot.num-retained.max",
     "2", "not be below snapshot.num-retained.min"),
    ("fixed", {"snapshot.expire.limit": "ten"}, "snapshot.expire.limit", "ten", "must be an integer"),
    ("dynamic", {"dynamic-bucket.max-buckets": "40000"}, "dynamic-bucket.max-buckets", "40000", "-1 or 1..32768"),
    ("fixed", {"ignore-delete": "maybe"}, "ignore-delete", "maybe", "true or false"),
    ("fixed", {"manifest.merge-min-count": "0"}, "manifest.merge-min-count", "0", "at least 1"),
]


@pytest.mark.parametrize("shape, options, option, value, problem", REFUSED,
                         ids=[f"{o}={v}" for _, _, o, v, _ in REFUSED])
def test_declared_option_is_refused_before_the_table_is_created(warehouse, shape, options, option, value, problem):
    with pytest.raises(ValidationError) as err:
        get_or_create_table({"warehouse": warehouse}, "db.t", spec(shape, options))
    assert (err.value.table, err.value.option, err.value.value) == ("db.t", option, value)
    assert str(err.value).startswith(f"table db.t, option {option!r}, value {value!r}: ")
    assert problem in str(err.value)
    assert not os.path.exists(os.path.join(warehouse, "db.db", "t"))


# ---------------------------------------------------------------- existing: refused before anything is staged

def pypaimon_table(warehouse, shape: str, options: dict, data: pd.DataFrame | None = None):
    """The table as another engine would make it, without this provider's checks; ``data`` written by
    pypaimon's own writer."""
    pk, partitions, bucket = SHAPES[shape]
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(spec(shape, {}).arrow_schema(), partition_keys=partitions,
                                                            primary_keys=pk, options={"bucket": bucket, **options}),
                         False)
    table = catalog.get_table("db.t")
    if data is not None:
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        write.write_arrow(arrow(data))
        builder.new_commit().commit(write.prepare_commit())
        write.close()
    return table


EXISTING = [
    ("fixed", {"merge-engine": "first-row", "changelog-producer": "full-compaction"}, "changelog-producer"),
    ("fixed", {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"}, "changelog-producer"),
    ("fixed", {"merge-engine": "partial-update", "fields.v.sequence-group": "s"}, "fields.v.sequence-group"),
    ("fixed", {"snapshot.num-retained.min": "-3"}, "snapshot.num-retained.min"),
    ("cross-partition", {"sequence.field": "s"}, "sequence.field"),
    ("cross-partition", {"cross-partition-upsert.index-ttl": "forever"}, "cross-partition-upsert.index-ttl"),
]


@pytest.mark.parametrize("shape, options, option", EXISTING, ids=[f"{o}" for _, o, _ in EXISTING])
def test_existing_table_with_option_is_refused_before_anything_is_staged(warehouse, shape, options, option):
    opts = {"warehouse": warehouse}
    first = batch(1)
    written = shape == "fixed" and "merge-engine" not in options  # what pypaimon's own writer writes
    table = pypaimon_table(warehouse, shape, options, first if written else None)
    table_dir = os.path.join(warehouse, "db.db", "t")
    before = files_under(table_dir)
    latest = table.snapshot_manager().get_latest_snapshot()

    with pytest.raises(ValidationError, match=f"table db.t, option '{option}'"):  # bootstrap-index
        bootstrap(opts, "db.t", warehouse + "/.index", 2)
    # the write job itself, as if a bootstrap had run before another engine set the option
    ctx = Bootstrapped(Pipeline(opts, "db.t", index_root=warehouse + "/.index", staging_root=warehouse + "/.staging"),
                       BootstrapResult(table="db.t", shards=2, base_snapshot_id=latest.id if latest else None,
                                       index_uri=warehouse + "/.index/db.t", keys=0, reused=False,
                                       index_decision="rebuilt", reason="", data_files_read=0))
    with pytest.raises(ValidationError, match=f"table db.t, option '{option}'"):
        write_run(ctx, arrow(batch(2)), run_id="refused")
    with pytest.raises(ValidationError, match=f"table db.t, option '{option}'"):  # compaction
        compact(get_table(opts, "db.t"), snapshot_id=latest.id if latest else 0, full=True, scope="table")

    assert files_under(table_dir) == before
    assert files_under(warehouse + "/.staging") == {} and files_under(warehouse + "/.index") == {}
    if written:  # what pypaimon wrote is still all there is
        assert_table_equals(readable(get_table(opts, "db.t")), expected_upsert([first], "id"), "id")


def readable(table):
    """In deletion-vector mode readers skip level-0 files (so rows written at level 0 are invisible: why the
    option is refused); read them as written."""
    return table.copy({"deletion-vectors.enabled": "false"})


def test_option_set_by_another_engine_after_our_writes_stops_the_next_write(warehouse):
    """Written by this provider, then another engine turns on deletion vectors: the next run is refused and
    the table keeps exactly the rows of the first run."""
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec("cross-partition", {}))
    first = batch(1)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(first), run_id="r1")
    ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)  # the next run's bootstrap, before the change
    from pypaimon.schema.schema_change import SchemaChange
    CatalogFactory.create(opts).alter_table("db.t", [SchemaChange.set_option("deletion-vectors.enabled", "true")])
    table_dir = os.path.join(warehouse, "db.db", "t")
    before = files_under(table_dir)
    with pytest.raises(ValidationError, match="table db.t, option 'deletion-vectors.enabled', value 'true'"):
        write_run(ctx, arrow(batch(2)), run_id="r2")
    assert files_under(table_dir) == before
    assert files_under(ctx.staging_root) == {}
    assert not get_table(opts, "db.t").new_read_builder().new_read().to_pandas(
        get_table(opts, "db.t").new_read_builder().new_scan().plan().splits()).shape[0]  # what a reader sees now
    assert_table_equals(readable(get_table(opts, "db.t")), expected_upsert([first], "id"), "id")


# ---------------------------------------------------------------- valid options keep working, parsed as Paimon

def test_paimon_durations_and_memory_sizes_are_parsed_and_written_with(warehouse):
    opts = {"warehouse": warehouse}
    options = {"cross-partition-upsert.index-ttl": "7 d", "rocksdb.block.cache-size": "64 mb",
               "rocksdb.writebuffer.size": "32mb", "snapshot.time-retained": "30 min", "changelog-producer": "none",
               "deletion-vectors.enabled": "false", "target-file-size": "128 mb", "file.format": "parquet"}
    get_or_create_table(opts, "db.t", spec("cross-partition", options))
    data = [batch(1), batch(2)]
    for i, df in enumerate(data):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(df), run_id=f"r{i}")
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(data, "id"), "id")
    index = TableOptions.parse("db.t", options).index
    assert (index.ttl_seconds, index.block_cache_bytes, index.write_buffer_bytes) == (7 * 86400, 64 << 20, 32 << 20)
    assert TableOptions.parse("db.t", options).expire.time_retained_ms == 30 * 60 * 1000
    assert TableOptions.parse("db.t", {"cross-partition-upsert.index-ttl": "1 h"}).index.ttl_seconds == 3600


# ---------------------------------------------------------------- declared once, documented from the declaration

def test_the_docs_option_table_is_the_declaration():
    """docs/configuration.md's table is markdown_table(): regenerate it from engine/options/declared.py."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    start = doc.index("| Option | Type | Default | What it does here |")
    end = doc.index("\n\n", start) + 1
    assert doc[start:end] == markdown_table(), (
        "docs/configuration.md's option table differs from the declaration; paste the output of\n"
        "python -c 'from airflow_paimon.engine.options import markdown_table; print(markdown_table())'")


def test_every_declared_option_parses_its_default_and_names_a_bad_value():
    for option in OPTIONS:
        key = option.key.replace("<name>", "v")
        assert TableOptions.parse("db.t", {}).get(key) is not None or option.default is None, key
        if option.kind in ("int", "memory", "duration", "bool", "enum"):
            with pytest.raises(ValidationError) as err:
                TableOptions.parse("db.t", {key: "x?"}).get(key)
            assert (err.value.table, err.value.option, err.value.value) == ("db.t", key, "x?")


def test_options_are_parsed_once_per_table_and_option_set():
    options = {"bucket": "2", "deletion-vectors.enabled": "true"}
    assert TableOptions.parse("db.t", options) is TableOptions.parse("db.t", dict(options))
    assert TableOptions.parse("db.t", options).compacts_level_0
    assert TableOptions.parse("db.t", {"changelog-producer": "lookup"}).compacts_level_0
    assert not TableOptions.parse("db.t", {"changelog-producer": "input"}).compacts_level_0
    assert TableOptions.parse("db.t", {"merge-engine": "first-row"}).compacts_level_0  # Paimon's needLookup
    assert TableOptions.parse("db.t", {"changelog-producer": "full-compaction"}).compaction \
        .full_compaction_delta_commits == 1
