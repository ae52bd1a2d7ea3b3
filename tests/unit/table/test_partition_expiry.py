"""Partition expiry (Paimon's partition.expiration-time, values-time strategy): expired partitions go in one
OVERWRITE snapshot, exactly once per run; the table reads as the pandas oracle without them; keys that lived
there come back exactly once in a later upsert (the index is rebuilt, never taken as still holding them)."""
from __future__ import annotations

from datetime import datetime

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.maintenance.partition_expiry import expire_partitions, strptime_format
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, bootstrap_result, upsert
from oracle import assert_table_equals, expected_upsert

DAYS = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"]


def _spec(bucket: str, **options) -> TableSpec:
    return TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                                "primary_keys": ["id"] if bucket == "-1" else ["id", "dt"], "partition_keys": ["dt"],
                                "options": {"bucket": bucket, **options}})


def _write(opts, spec, frame, run_id):
    ctx = bootstrap(opts, "db.t", opts["warehouse"] + "/.index", 2)
    return upsert(ctx, pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), run_id=run_id)


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_expired_partitions_drop_once_and_their_keys_come_back_once(warehouse, bucket):
    opts, spec = {"warehouse": warehouse}, _spec(bucket, **{"partition.expiration-time": "2 d"})
    get_or_create_table(opts, "db.t", spec)
    day1 = pd.DataFrame({"id": range(10), "dt": [d for d in DAYS for _ in (0, 1)], "v": [float(i) for i in range(10)]})
    _write(opts, spec, day1, "day1")
    identity = CommitIdentity.for_run("dag", "run-5", "db.t:expire-partitions")
    now = datetime(2026, 11, 5)  # cut-off 2026-11-03 00:00: 11-01 and 11-02 are older, 11-03 is not

    dry = expire_partitions(opts, "db.t", identity, now, dry_run=True)
    assert dry["expired_partitions"] == [{"dt": "2026-11-01"}, {"dt": "2026-11-02"}] and dry["snapshot_id"] == 1
    result = expire_partitions(opts, "db.t", identity, now)
    assert result["snapshot_id"] == 2 and not result["already_committed"]
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "OVERWRITE"
    kept = day1[day1.dt >= "2026-11-03"]
    assert_table_equals(table, kept, "id")

    retry = expire_partitions(opts, "db.t", identity, now)  # the same DAG run's retry finds its snapshot
    assert retry == {**result, "already_committed": True}
    later = expire_partitions(opts, "db.t", CommitIdentity.for_run("dag", "run-5b", "db.t:expire-partitions"), now)
    assert later["expired_partitions"] == [] and later["snapshot_id"] == 2  # nothing left: no snapshot

    # keys 0-3 lived in the dropped partitions: an upsert brings them back once, in a live partition
    back = pd.DataFrame({"id": [0, 1, 3, 5], "dt": ["2026-11-05"] * 4, "v": [100.0, 101.0, 103.0, 105.0]})
    if bucket == "-1":
        assert bootstrap_result(opts, "db.t", warehouse + "/.index", 2).index_decision == "rebuilt"
    _write(opts, spec, back, "day6")
    key = "id" if bucket == "-1" else ["id", "dt"]
    expected = expected_upsert([kept, back], key) if bucket == "-1" else pd.concat(
        [kept[~kept.set_index(["id", "dt"]).index.isin(back.set_index(["id", "dt"]).index)], back])
    got = assert_table_equals(get_table(opts, "db.t"), expected.sort_values(key), key)
    assert not got.duplicated(key).any()


def test_formatter_and_pattern(warehouse):
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["hr", "STRING"]],
                                "primary_keys": ["id", "dt", "hr"], "partition_keys": ["dt", "hr"],
                                "options": {"bucket": "1", "partition.expiration-time": "12 h",
                                            "partition.timestamp-formatter": "yyyyMMdd HH:mm",
                                            "partition.timestamp-pattern": "$dt $hr:00"}})
    get_or_create_table(opts, "db.t", spec)
    rows = pd.DataFrame({"id": [1, 2, 3], "dt": ["20261101", "20261101", "20261102"], "hr": ["03", "20", "01"]})
    _write(opts, spec, rows, "r1")
    result = expire_partitions(opts, "db.t", CommitIdentity.for_run("d", "r", "x"), datetime(2026, 11, 2, 7))
    assert result["expired_partitions"] == [{"dt": "20261101", "hr": "03"}]  # 11-01 20:00 is not 12 h old
    assert sorted(get_table(opts, "db.t").new_read_builder().new_read().to_pandas(
        get_table(opts, "db.t").new_read_builder().new_scan().plan().splits()).id) == [2, 3]


def test_java_formatter_letters():
    assert strptime_format("db.t", "yyyy-MM-dd HH:mm:ss") == "%Y-%m-%d %H:%M:%S"
    assert strptime_format("db.t", "yyyyMMdd") == "%Y%m%d"
    with pytest.raises(ValidationError, match="table db.t, value \"yyyy-MM-dd'T'HH\".*only the fields"):
        strptime_format("db.t", "yyyy-MM-dd'T'HH")


@pytest.mark.parametrize("spec, options, match", [
    (TableSpec.from_dict({"columns": [["id", "BIGINT"]], "primary_keys": ["id"], "options": {"bucket": "1"}}),
     {}, "needs a partitioned table"),
    (_spec("2"), {}, "no partition.expiration-time"),
    (_spec("2"), {"partition.expiration-time": "forever"}, "partition.expiration-time.*not a duration"),
    (_spec("2"), {"partition.expiration-time": "1 d", "partition.timestamp-pattern": "$day"}, "column 'day'"),
    (_spec("2"), {"partition.expiration-time": "1 d", "partition.expiration-strategy": "update-time"},
     "partition.expiration-strategy"),
])
def test_refusals_name_the_table_and_option(warehouse, spec, options, match):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    if options:
        from airflow_paimon.engine.table.catalog import open_catalog
        from pypaimon.schema.schema_change import SchemaChange
        open_catalog(opts).alter_table("db.t", [SchemaChange.set_option(k, v) for k, v in options.items()])
    with pytest.raises(ValidationError, match=f"table db.t.*{match}"):
        expire_partitions(opts, "db.t", CommitIdentity.for_run("d", "r", "x"), datetime(2026, 11, 5))


def test_deletion_vector_table_drops_the_vectors_of_expired_partitions(warehouse):
    from pypaimon.manifest.index_manifest_file import IndexManifestFile

    opts = {"warehouse": warehouse}
    spec = _spec("-1", **{"partition.expiration-time": "2 d", "deletion-vectors.enabled": "true"})
    get_or_create_table(opts, "db.t", spec)
    day1 = pd.DataFrame({"id": range(10), "dt": [d for d in DAYS for _ in (0, 1)], "v": [float(i) for i in range(10)]})
    _write(opts, spec, day1, "day1")
    update = day1.assign(v=day1.v + 0.5)  # every row replaced: a vector in every bucket
    _write(opts, spec, update, "day2")

    def vector_partitions():
        table = get_table(opts, "db.t")
        snap = table.snapshot_manager().get_latest_snapshot()
        return sorted({e.partition.values[0] for e in IndexManifestFile(table).read(snap.index_manifest)
                       if e.index_file.index_type == "DELETION_VECTORS"}) if snap.index_manifest else []

    assert vector_partitions() == DAYS
    expire_partitions(opts, "db.t", CommitIdentity.for_run("dag", "r", "db.t:expire-partitions"), datetime(2026, 11, 5))
    assert vector_partitions() == DAYS[2:]
    assert_table_equals(get_table(opts, "db.t"), update[update.dt >= "2026-11-03"], "id")
