"""Shard SST files: written sorted from any input order, dictionary-encoded values and tombstones
included, and read back through a shard's RocksDB."""
import os

import numpy as np
import pyarrow as pa
import pytest

from airflow_paimon.engine.codec.keys import encode_keys
import airflow_paimon.engine.index.shard as shard_module
from airflow_paimon.engine.files import storage
from airflow_paimon.engine.index.layout import IndexFile, IndexManifest, ShardMeta, describe_file, verify
from airflow_paimon.engine.index.shard import IndexOptions, ShardIndex, write_sst
from airflow_paimon.engine.index.store import load_shard


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


def test_an_sst_written_in_many_chunks_holds_every_pair(tmp_path, monkeypatch):
    # write_sst turns keys into Python bytes a chunk at a time: pairs must stay together across chunk ends
    monkeypatch.setattr(shard_module, "SST_CHUNK", 997)
    ids = np.random.default_rng(3).permutation(5_000)
    places = pa.array([b"p0", b"p1", b"p2", b"p3"], pa.binary())
    path = str(tmp_path / "chunks.sst")
    assert write_sst(keys_of(ids), pa.DictionaryArray.from_arrays(pa.array(ids % 4, pa.int32()), places), path) == 5_000
    tombstones = str(tmp_path / "tombstones.sst")
    values = pa.array([None if i % 3 == 0 else b"v%d" % i for i in ids], pa.binary())
    write_sst(keys_of(ids), values, tombstones)
    with ShardIndex(str(tmp_path)) as index:
        index.ingest([path])
        assert index.lookup(keys_of(np.arange(5_000))).to_pylist() == [b"p%d" % (i % 4) for i in range(5_000)]
        index.ingest([tombstones])
        assert index.lookup(keys_of(np.arange(5_000))).to_pylist() == [None if i % 3 == 0 else b"v%d" % i
                                                                       for i in range(5_000)]


@pytest.mark.parametrize("multi_get_from", [1, 10**9])
def test_lookups_in_many_slices_answer_every_key_in_input_order(tmp_path, monkeypatch, multi_get_from):
    """A lookup gets its keys a slice at a time, by a get loop or rocksdict's multi-get (a large lookup): either
    way every key is answered once, in the caller's order, unknown keys null."""
    monkeypatch.setattr(shard_module, "LOOKUP_BATCH", 333)
    monkeypatch.setattr(shard_module, "MULTI_GET_FROM", multi_get_from)
    ids = np.random.default_rng(5).permutation(6_000)
    path = str(tmp_path / "shard.sst")
    write_sst(keys_of(ids[:4_000]), pa.array([b"v%d" % i for i in ids[:4_000]], pa.binary()), path)
    probe = np.random.default_rng(6).permutation(ids)[:2_500]
    with ShardIndex(str(tmp_path)) as index:
        index.ingest([path])
        found = index.lookup(keys_of(probe)).to_pylist()
    known = set(ids[:4_000].tolist())
    assert found == [b"v%d" % i if i in known else None for i in probe]


def test_verify_reads_a_checksum_only_when_the_file_may_have_changed(tmp_path, monkeypatch):
    (tmp_path / "snapshot-1").mkdir()
    path = tmp_path / "snapshot-1" / "shard.sst"
    write_sst(keys_of(np.arange(100)), pa.array([b"x"] * 100, pa.binary()), str(path))
    described = describe_file(str(tmp_path), "snapshot-1/shard.sst", 100)
    manifest = IndexManifest("db.t", 1, 0, 1, "scheme", [ShardMeta(0, [described], 100)])
    hashed = []
    real_sha256 = storage.sha256
    monkeypatch.setattr(storage, "sha256", lambda uri: hashed.append(uri) or real_sha256(uri))
    assert verify(str(tmp_path), manifest) is None and hashed == []  # untouched since published: no read

    older = IndexManifest("db.t", 1, 0, 1, "scheme", [ShardMeta(0, [IndexFile(**{**described.__dict__,
                                                                                  "mtime_ns": None})], 100)])
    assert verify(str(tmp_path), older) is None and len(hashed) == 1  # a manifest without mtimes: checksum

    data = bytearray(path.read_bytes())
    data[10:17] = b"garbage"
    path.write_bytes(bytes(data))  # same size, new content, written later (the clock moved on: a jiffy here)
    os.utime(path, ns=(described.mtime_ns + 10**9,) * 2)
    assert "corrupt" in verify(str(tmp_path), manifest)
    path.unlink()
    assert "missing" in verify(str(tmp_path), manifest)


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


def test_later_files_win_when_ingested_in_one_call(tmp_path):
    # ShardIndex.ingest hands all files to RocksDB in one call; overlapping files must still apply in order
    rng = np.random.default_rng(11)
    expected: dict[bytes, bytes | None] = {}
    paths = []
    for i in range(5):
        ids = rng.choice(2_000, size=800, replace=False)
        gone = rng.random(len(ids)) < 0.2
        values = pa.array([None if g else b"v%d-%d" % (i, k) for k, g in zip(ids, gone)], pa.binary())
        paths.append(str(tmp_path / f"f{i}.sst"))
        write_sst(keys_of(ids), values, paths[-1])
        expected.update(zip(keys_of(ids).to_pylist(), values.to_pylist()))
    with ShardIndex(str(tmp_path)) as index:
        index.ingest(paths, move=True)
        assert not any(os.path.exists(p) for p in paths)  # moved into the DB
        probe = keys_of(np.arange(2_000))
        assert index.lookup(probe).to_pylist() == [expected.get(k) for k in probe.to_pylist()]


def test_changes_are_seen_by_later_lookups_and_exports(tmp_path):
    ids = np.arange(1_000)
    with ShardIndex(str(tmp_path)) as index:
        index.put(keys_of(ids), pa.array([b"a%d" % i for i in ids], pa.binary()))
        assert index.lookup(keys_of([5, 1_000])).to_pylist() == [b"a5", None]
        index.delete(keys_of(ids[:10]))
        index.put(keys_of([3, 20]), pa.array([b"again", b"b20"], pa.binary()))
        assert index.lookup(keys_of([2, 3, 20, 30])).to_pylist() == [None, b"again", b"b20", b"a30"]
        index.put(keys_of([30]), pa.array([b"b30"], pa.binary()))  # not looked up before the exports
        assert index.changed == 1_013
        delta, full = str(tmp_path / "delta.sst"), str(tmp_path / "full.sst")
        assert index.export_delta(delta) == 1_000  # last change per key, deletes as tombstones
        assert index.export_full(full) == 991
    for path in (delta, full):
        with ShardIndex(str(tmp_path)) as reloaded:
            reloaded.ingest([path])
            assert reloaded.lookup(keys_of([2, 3, 20, 30, 999])).to_pylist() == [None, b"again", b"b20", b"b30",
                                                                                   b"a999"]


def test_a_task_changing_many_keys_holds_a_bounded_part_of_them(tmp_path, monkeypatch):
    """Past HELD_CHANGES recorded changes go into the DB and out of memory; the shard is then exported in full
    (base keys, changes, deletes applied) — a first load of millions of keys per shard."""
    from airflow_paimon.engine.index.store import FULL, export_changes

    monkeypatch.setattr(shard_module, "HELD_CHANGES", 250)
    base = tmp_path / "base.sst"
    write_sst(keys_of(np.arange(100)), pa.array([b"old"] * 100, pa.binary()), str(base))
    meta = ShardMeta(0, [describe_file(str(tmp_path), "base.sst", 100)], 100)
    (tmp_path / "work").mkdir()
    with load_shard(str(tmp_path), meta, str(tmp_path / "work"), IndexOptions()) as index:
        index.disjoint = True
        for start in range(100, 1_100, 100):  # ten key-disjoint chunks of new keys
            index.put(keys_of(np.arange(start, start + 100)), pa.array([b"new"] * 100, pa.binary()))
            assert sum(len(k) for k in index._changed_keys) <= 250
        index.delete(keys_of([0, 500]))
        assert index.exports_in_full and index.changed == 1_002
        path, file_type, entries = export_changes(index, meta, str(tmp_path))
    assert (file_type, entries) == (FULL, 1_098)
    with ShardIndex(str(tmp_path)) as reloaded:
        reloaded.ingest([path])
        assert reloaded.lookup(keys_of([0, 1, 500, 501, 1_099, 1_100])).to_pylist() == [None, b"old", None, b"new",
                                                                                       b"new", None]


class CountingGets:
    """A shard's DB whose gets are counted."""

    def __init__(self, db):
        self.db, self.gets = db, 0

    def get(self, key):
        self.gets += 1
        return self.db.get(key)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_a_first_loads_key_disjoint_lookups_read_nothing(tmp_path, monkeypatch):
    """A shard loaded from no files holds only the task's own changes, which key-disjoint chunks never look up: its
    lookups answer "unknown" without a get, also once changes went into the DB. Loaded from files, it reads them."""
    from airflow_paimon.engine.index.store import FULL, export_changes

    monkeypatch.setattr(shard_module, "HELD_CHANGES", 250)  # changes released into the DB, as in a large first load
    empty = ShardMeta(0, [], 0)
    (tmp_path / "work").mkdir()
    with load_shard(str(tmp_path), empty, str(tmp_path / "work"), IndexOptions()) as index:
        index.disjoint = True
        index._db = counting = CountingGets(index._db)
        for start in range(0, 1_000, 100):  # ten key-disjoint chunks of new keys
            keys = keys_of(np.arange(start, start + 100))
            assert index.lookup(keys).null_count == 100
            index.put(keys, pa.array([b"new"] * 100, pa.binary()))
        assert counting.gets == 0 and index.exports_in_full
        path, file_type, entries = export_changes(index, empty, str(tmp_path))
    assert (file_type, entries) == (FULL, 1_000)
    (tmp_path / "published").mkdir()
    os.replace(path, tmp_path / "published" / "full.sst")
    loaded = ShardMeta(0, [describe_file(str(tmp_path), "published/full.sst", 1_000)], 1_000)
    with load_shard(str(tmp_path), loaded, str(tmp_path / "work"), IndexOptions()) as index:
        index.disjoint = True
        index._db = counting = CountingGets(index._db)
        assert index.lookup(keys_of([5, 999, 1_000])).to_pylist() == [b"new", b"new", None]
        assert counting.gets == 3


def test_loading_a_shard_leaves_its_published_files_as_they_were(tmp_path):
    # a warehouse on the local filesystem hands its files to RocksDB as hard links: RocksDB must not write
    # into them, not even for the overlapping delta, which takes a sequence number
    published = tmp_path / "index" / "snapshot-1"
    published.mkdir(parents=True)
    ids = np.arange(1_000)
    write_sst(keys_of(ids), pa.array([b"base"] * len(ids), pa.binary()), str(published / "base.sst"))
    write_sst(keys_of(ids[::2]), pa.array([b"delta"] * 500, pa.binary()), str(published / "delta.sst"))
    before = {p: p.read_bytes() for p in published.iterdir()}
    mtimes = {p: p.stat().st_mtime_ns for p in before}  # the bootstrap trusts an unchanged mtime (layout.verify)
    meta = ShardMeta(0, [IndexFile(f"snapshot-1/{name}", 0, "", 0) for name in ("base.sst", "delta.sst")])
    (tmp_path / "work").mkdir()
    with load_shard(str(tmp_path / "index"), meta, str(tmp_path / "work"), IndexOptions()) as index:
        assert index.lookup(keys_of([0, 1, 1_000])).to_pylist() == [b"delta", b"base", None]
        index.put(keys_of([1]), pa.array([b"new"], pa.binary()))
        assert index.export_full(str(tmp_path / "full.sst")) == len(ids)
    assert {p: p.read_bytes() for p in published.iterdir()} == before
    assert all(os.stat(p).st_nlink == 1 for p in before)
    assert {p: p.stat().st_mtime_ns for p in before} == mtimes


def test_shared_buckets_are_buckets_with_keys_of_a_shard_that_does_not_own_them():
    from airflow_paimon.engine.index.layout import IndexManifest, ShardMeta

    def manifest(*counts):
        return IndexManifest("db.t", 1, 0, len(counts), "murmur3",
                             [ShardMeta(s, [], 0, c) for s, c in enumerate(counts)])

    # shard s owns bucket b where b % 2 == s
    assert not manifest({"p=a": {"0": 5, "2": 1}}, {"p=a": {"1": 3}, "p=b": {"3": 2}}).shares_buckets()
    assert manifest({"p=a": {"0": 5}}, {"p=a": {"0": 3}}).shares_buckets()  # bucket 0 also holds keys of shard 1
    assert not manifest({"p=a": {"0": 5}}, {"p=a": {"0": 0}}).shares_buckets()  # no key left there


def mapped_files(directory) -> set[str]:
    """This process's memory maps of files under ``directory`` (Linux's /proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        return {line.split()[-1] for line in maps if str(directory) in line}


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's /proc/self/maps")
def test_only_a_shard_loaded_from_files_maps_them(tmp_path, monkeypatch):
    """A first load's shard reads its DB without memory maps (its export would map every page of it into the task);
    a shard loaded from files maps them for its lookups."""
    monkeypatch.setattr(shard_module, "HELD_CHANGES", 250)
    (tmp_path / "work").mkdir()
    with load_shard(str(tmp_path), ShardMeta(0, [], 0), str(tmp_path / "work"), IndexOptions()) as index:
        index.disjoint = True
        for start in range(0, 1_000, 100):
            index.put(keys_of(np.arange(start, start + 100)), pa.array([b"new"] * 100, pa.binary()))
        assert index.exports_in_full
        assert index.export_full(str(tmp_path / "full.sst")) == 1_000
        assert not {f for f in mapped_files(tmp_path / "work") if f.endswith(".sst")}
    (tmp_path / "published").mkdir()
    os.replace(tmp_path / "full.sst", tmp_path / "published" / "full.sst")
    loaded = ShardMeta(0, [describe_file(str(tmp_path), "published/full.sst", 1_000)], 1_000)
    with load_shard(str(tmp_path), loaded, str(tmp_path / "work"), IndexOptions()) as index:
        assert index.lookup(keys_of([5, 1_000])).to_pylist() == [b"new", None]
        assert {f for f in mapped_files(tmp_path / "work") if f.endswith(".sst")}
