"""Dynamic-bucket assignment against pypaimon's own PartitionIndex / computeAssigner / key hashes."""
import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.index.dynamic_bucket import _PartitionIndex, compute_assigner, is_my_bucket
from pypaimon.write.row_key_extractor import DynamicBucketRowKeyExtractor

from airflow_paimon.engine.assign.dynamic import (PartitionIndex, assigner_of, check_dynamic_table, key_hashes,
                                                  partition_hashes)
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.index.hash_index import read_hashes, write_hashes

rng = np.random.default_rng(11)


def _table(tmp_path, primary_keys, partition_keys, options, name="t"):
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("name", pa.string(), False),
                        pa.field("dt", pa.string(), False), pa.field("v", pa.float64())])
    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    catalog.create_database("db", True)
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(
        schema, partition_keys=partition_keys, primary_keys=primary_keys, options=options), True)
    return catalog.get_table(f"db.{name}")


@pytest.mark.parametrize("assigners,assign_id,target,max_buckets", [(1, 0, 7, -1), (3, 1, 5, -1), (4, 3, 50, -1),
                                                                    (2, 0, 3, 20)])
def test_partition_index_assigns_like_pypaimon(assigners, assign_id, target, max_buckets):
    mine = lambda b: is_my_bucket(b, assigners, assign_id)  # noqa: E731
    # Loaded state: some of this assigner's buckets, partly full.
    own = [b for b in range(12) if mine(b)][:3]
    rows = {b: int(rng.integers(0, target + 1)) for b in own}
    known_hashes = rng.choice(2**31, 40, replace=False).astype(np.int32)
    known_buckets = rng.choice(own, 40).astype(np.int32)
    ours = PartitionIndex(known_hashes, known_buckets, rows, target)
    theirs = _PartitionIndex(dict(zip(known_hashes.tolist(), known_buckets.tolist())), dict(sorted(rows.items())),
                             target)
    for _ in range(4):  # several batches: state carries over
        batch = np.concatenate([rng.choice(known_hashes, 30), rng.integers(-2**31, 2**31, 200).astype(np.int32)])
        batch = np.concatenate([batch, batch[rng.integers(0, len(batch), 40)]])  # in-batch repeats
        rng.shuffle(batch)
        got = ours.assign(batch, mine, max_buckets, rng=np.random.RandomState(0))
        expected = [theirs.assign(int(h), mine, max_buckets, max(theirs.total_bucket_list + [0])) for h in batch]
        if max_buckets == -1:
            assert got.tolist() == expected
        else:  # past max-buckets both pick randomly among own buckets: compare the deterministic part
            assert all(mine(b) and b < max_buckets for b in got)
            first = {}
            for h, b in zip(batch.tolist(), got.tolist()):
                assert first.setdefault(h, b) == b  # one hash, one bucket


def test_compute_assigner_matches_pypaimon():
    p = rng.integers(-2**31, 2**31, 5000).astype(np.int32)
    k = rng.integers(-2**31, 2**31, 5000).astype(np.int32)
    for channels, assigners in [(1, 1), (4, 4), (6, 3), (5, 2)]:
        expected = [compute_assigner(int(a), int(b), channels, assigners) for a, b in zip(p, k)]
        assert assigner_of(p, k, channels, assigners).tolist() == expected


def test_key_and_partition_hashes_match_pypaimon_extractor(tmp_path):
    table = _table(tmp_path, ["id", "name", "dt"], ["dt"], {"bucket": "-1"})
    check_dynamic_table(table)
    n = 5000
    data = pa.record_batch([pa.array(rng.integers(-2**40, 2**40, n)), pa.array([f"n{i % 97}-" * (i % 5)
                                                                                for i in range(n)]),
                            pa.array([f"2026-01-{i % 28 + 1:02d}" for i in range(n)]), pa.array(rng.random(n))],
                           schema=table_arrow_schema(table))
    _, p_hashes, k_hashes = DynamicBucketRowKeyExtractor(table.table_schema).extract_hashes_batch(data)
    signed = lambda xs: [x - 2**32 if x >= 2**31 else x for x in xs]  # noqa: E731
    assert key_hashes(table, data).tolist() == signed(k_hashes)
    assert partition_hashes(table, data).tolist() == signed(p_hashes)


def table_arrow_schema(table):
    from pypaimon.schema.data_types import PyarrowFieldParser
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def test_hash_index_file_round_trip_is_big_endian_ints(tmp_path):
    table = _table(tmp_path, ["id", "dt"], ["dt"], {"bucket": "-1"})
    hashes = np.array([5, -1, 2**31 - 1, -2**31, 5], np.int32)
    entry = write_hashes(table, ("2026-01-01",), 3, hashes)
    assert entry.index_file.index_type == "HASH" and entry.index_file.row_count == 4 and entry.bucket == 3
    assert entry.index_file.file_size == 16
    assert sorted(read_hashes(table, entry).tolist()) == sorted({5, -1, 2**31 - 1, -2**31})


@pytest.mark.parametrize("primary_keys,options,error,message", [
    (["id"], {"bucket": "-1"}, ValidationError, r"table db\.\w+: the primary key lacks partition fields \['dt'\]: "
                                                "that is a cross-partition table"),
    (["id", "dt"], {"bucket": "-1", "bucket-key": "id"}, ValidationError, "option 'bucket-key', value 'id'"),
    (["id", "dt"], {"bucket": "4"}, ValidationError, "option 'bucket', value '4': a dynamic-bucket write needs "
                                                     "bucket = -1"),
])
def test_not_dynamic_tables_are_refused(tmp_path, primary_keys, options, error, message):
    table = _table(tmp_path, primary_keys, ["dt"], options)
    with pytest.raises(error, match=message):
        check_dynamic_table(table)
