"""A write task's buffer (engine/write/buffer.py): under ``write-buffer-size`` it holds the rows in memory;
beyond it, it spills them and gives each shard back in chunks no key spans. A cross-partition write through a
buffer a few kilobytes large gives the table the oracle expects, with one file per bucket as in memory."""
import os
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.index.sharding import shard_of
from airflow_paimon.engine.files.scan import added_entries
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.write.buffer import WriteBuffer
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


def source(n: int, keys: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(rng.integers(0, keys, n), pa.int64()),
                     "_order": pa.array(np.arange(n), pa.int64())})


def chunks_by_shard(buffer: WriteBuffer) -> dict[int, list[pa.Table]]:
    return {shard: list(chunks) for shard, chunks in buffer.shard_chunks()}


def test_a_buffer_under_its_size_stays_in_memory():
    rows = source(5000, 1000, 1)
    with WriteBuffer(["id"], 4, rows.nbytes + 1).extend(rows.to_batches(max_chunksize=500)) as buffer:
        assert not buffer.spilled
        shards = chunks_by_shard(buffer)
    expected = shard_of(rows, ["id"], 4)
    assert buffer.rows_per_shard.tolist() == np.bincount(expected, minlength=4).tolist()
    for shard, [chunk] in shards.items():
        assert sorted(chunk.column("_order").to_pylist()) == np.nonzero(expected == shard)[0].tolist()


def test_a_full_buffer_spills_and_gives_each_shard_back_in_key_disjoint_chunks(tmp_path):
    rows = source(20000, 3000, 2)  # every key about seven times
    limit = rows.nbytes // 20
    with WriteBuffer(["id"], 3, limit, str(tmp_path)).extend(rows.to_batches(max_chunksize=700)) as buffer:
        assert buffer.spilled and os.listdir(tmp_path)
        shards = chunks_by_shard(buffer)
    assert not os.listdir(tmp_path)  # the spill files are gone with the buffer
    expected = shard_of(rows, ["id"], 3)
    for shard, chunks in shards.items():
        assert len(chunks) > 1
        assert all(c.nbytes <= 2 * limit for c in chunks)
        orders = [o for c in chunks for o in c.column("_order").to_pylist()]
        assert sorted(orders) == np.nonzero(expected == shard)[0].tolist()  # every row once, in its shard
        keys = [set(c.column("id").to_pylist()) for c in chunks]
        assert sum(map(len, keys)) == len(set().union(*keys))  # no key in two chunks


SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "400"}})


@pytest.mark.parametrize("buffer_size", ["8 kb", "256 mb"])
@pytest.mark.slow
def test_writes_through_a_spilling_buffer_match_the_oracle(warehouse, buffer_size, monkeypatch):
    """Inserts, in-batch duplicates, moves between partitions and deletes, five runs; with an 8 kb buffer each
    run's write spills and takes every shard in several chunks."""
    chunks = []
    taken = WriteBuffer._chunks_of
    monkeypatch.setattr(WriteBuffer, "_chunks_of", lambda self, shard: chunks.append(shard) or taken(self, shard))
    spec = TableSpec.from_dict({**SPEC.to_dict(), "options": {**SPEC.options, "write-buffer-size": buffer_size}})
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    rng = np.random.default_rng(7)
    batches = []
    for i in range(5):
        n = 3000
        frame = pd.DataFrame({"id": rng.integers(0, 4000, n), "dt": rng.choice(["a", "b", "c"], n),
                              "v": rng.random(n), "kind": rng.choice(["+I", "+U", "-D"], n, p=[.5, .4, .1])})
        batches.append(frame)
        kinds = frame["kind"].map(KINDS).to_numpy(np.int8)
        data = pa.Table.from_pandas(frame.drop(columns="kind"), schema=spec.arrow_schema(), preserve_index=False)
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), data, f"r{i}", row_kinds=kinds)
        table = get_table(opts, "db.t")
        assert_table_equals(table, expected_upsert(batches, "id", row_kind="kind"), "id")

        assert bool(chunks) == (buffer_size == "8 kb")  # the small buffer spilled
        chunks.clear()
        # each bucket written once from all its rows, spilled or not: one file per bucket the run touched
        places = Counter((tuple(e.partition.values), e.bucket)
                         for e in added_entries(table, table.snapshot_manager().get_latest_snapshot()))
        assert set(places.values()) == {1}
