"""Shard SST files: written sorted from any input order, dictionary-encoded values and tombstones
included, and read back through a shard's RocksDB."""
import os

import numpy as np
import pyarrow as pa
import pytest

from airflow_paimon.engine.index.keys import encode_keys
from airflow_paimon.engine.index.shard import ShardIndex, write_sst


def keys_of(ids) -> pa.Array:
    return encode_keys(pa.table({"id": pa.array(ids, pa.int64())}), ["id"])


def test_dictionary_values_and_tombstones_round_trip(tmp_path):
    ids = np.random.default_rng(7).permutation(10_000) - 5_000
    places = pa.array([b"place-a", b"place-b", b"place-c"], pa.binary())
    refs = pa.array(ids % 3, pa.int32())
    base = str(tmp_path / "base.sst")
    assert write_sst(keys_of(ids), pa.DictionaryArray.from_arrays(refs, places), base) == len(ids)
    gone = ids[:100]
    delta = str(tmp_path / "delta.sst")
    write_sst(keys_of(gone), pa.nulls(len(gone), pa.binary()), delta)
    with ShardIndex(str(tmp_path)) as index:
        index.ingest([base, delta])
        probe = np.concatenate([ids[:200], [10**9]])
        found = index.lookup(keys_of(probe)).to_pylist()
    expected = [None] * 100 + [places[int(i % 3)].as_py() for i in ids[100:200]] + [None]
    assert found == expected


def test_a_key_given_twice_is_refused(tmp_path):
    with pytest.raises(ValueError, match="a key appears twice"):
        write_sst(keys_of([1, 2, 1]), pa.array([b"a", b"b", b"c"]), str(tmp_path / "x.sst"))
    assert not os.path.exists(tmp_path / "x.sst")


def test_export_full_writes_every_live_key_once(tmp_path):
    ids = np.arange(5_000)
    with ShardIndex(str(tmp_path)) as index:
        assert index.export_full(str(tmp_path / "empty.sst")) == 0
        index.put(keys_of(ids), pa.array([b"x%d" % i for i in ids], pa.binary()))
        index.delete(keys_of(ids[:10]))
        full = str(tmp_path / "full.sst")
        assert index.export_full(full) == len(ids) - 10
    with ShardIndex(str(tmp_path)) as reloaded:
        reloaded.ingest([full])
        assert reloaded.lookup(keys_of([0, 10, 4_999])).to_pylist() == [None, b"x10", b"x4999"]
