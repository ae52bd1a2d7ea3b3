"""Fixed- and dynamic-bucket tables written by the engine (assignment, in-batch merge, bucket writer, HASH
index, FileStoreCommit), read back with pypaimon and compared with an oracle of Paimon's merge engines;
and interleaved with pypaimon's own batch writer in both directions."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.common.options.core_options import CoreOptions
from pypaimon.write.commit_message import CommitMessage
from pypaimon.write.file_store_commit import FileStoreCommit

from airflow_paimon.engine.assign.dynamic import (HashBucketAssigner, bucket_index_update, key_hashes,
                                                  partition_groups)
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.assign.fixed import base_snapshot_id, check_fixed_table, fixed_buckets
from airflow_paimon.engine.merge.rowkind import occurrence_rounds, resolve_duplicates, row_kinds
from airflow_paimon.engine.codec.kinds import ROW_KINDS
from airflow_paimon.engine.merge.merge_engine import MergeRules
from airflow_paimon.engine.index.hash_index import hash_index_entries
from airflow_paimon.engine.files.scan import buckets_at
from airflow_paimon.engine.assign.shapes import HASH_DYNAMIC, shape_of
from airflow_paimon.engine.write.bucket_writer import write_bucket

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
                    pa.field("v", pa.float64()), pa.field("w", pa.string()), pa.field("s", pa.int64())])
KEY = ["dt", "id"]
SHAPES = {"fixed": {"bucket": "3"}, "dynamic": {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}}
ENGINES = {"deduplicate": {}, "partial-update": {},
           "first-row": {}, "aggregation": {"fields.v.aggregate-function": "sum"}}


# ---------------------------------------------------------------- the engine's write, run in-process

def engine_write(table, batch: pa.Table, ops: list[str], identifier: int) -> int:
    """One batch through the engine, committed as one snapshot; returns the snapshot id."""
    opts = table.table_schema.options
    snap = table.snapshot_manager().get_latest_snapshot()
    kinds = row_kinds(pa.array(ops), identifier=table.identifier)
    rules = MergeRules.of(opts)
    pk = list(table.primary_keys)
    if rules.aggregates:  # Paimon's own merge aggregates: r-th record of a key -> r-th file
        rounds = occurrence_rounds(batch, pk, list(rules.sequence_fields), rules.sequence_ascending)
    else:
        resolved = resolve_duplicates(batch, kinds, pk, rules, identifier=table.identifier)
        batch, kinds, rounds = resolved.rows, resolved.row_kinds, np.zeros(resolved.rows.num_rows, np.int64)
    dynamic = shape_of(table) is HASH_DYNAMIC
    buckets = HashBucketAssigner(table, snap).assign(batch) if dynamic else fixed_buckets(table, batch)
    max_seq = {(bf.partition, bf.bucket): bf.max_sequence_number for bf in buckets_at(table, snap)}
    entries = hash_index_entries(table, snap) if dynamic else None
    messages = []
    for partition, idx in partition_groups(batch, list(table.partition_keys)):
        for bucket in np.unique(buckets[idx]).tolist():
            rows = idx[buckets[idx] == bucket]
            seq, files = max_seq.get((partition, bucket), -1), []
            for r in range(int(rounds[rows].max()) + 1):
                part = rows[rounds[rows] == r]
                files += write_bucket(table, partition, bucket, batch.take(part), pa.array(kinds[part]), seq).new_files
                seq += len(part)
            msg = CommitMessage(partition=partition, bucket=bucket, new_files=files)
            if dynamic:
                msg.index_adds = bucket_index_update(table, snap, partition, bucket,
                                                     key_hashes(table, batch.take(rows)), entries)
            messages.append(msg)
    commit = FileStoreCommit(table.new_snapshot_commit(), table, "engine-test")
    try:
        commit.commit(messages, identifier)
    finally:
        commit.close()
    return table.snapshot_manager().get_latest_snapshot().id


def pypaimon_write(table, batch: pa.Table) -> None:
    builder = table.new_batch_write_builder()
    write = builder.new_write()
    write.write_arrow(batch)
    builder.new_commit().commit(write.prepare_commit())
    write.close()


# ---------------------------------------------------------------- oracle: Paimon's merge engines, row by row

def oracle(engine: str, batches, seq_field: str | None = None) -> pd.DataFrame:
    state: dict[tuple, dict] = {}
    for rows, ops in batches:
        for row, op in zip(rows.to_pylist(), ops):
            k, retract = (row["dt"], row["id"]), ROW_KINDS[op] in (1, 3)
            old = state.get(k)
            if engine == "deduplicate":
                if old is not None and seq_field and (row[seq_field] or -1) < (old[seq_field] or -1):
                    continue  # sequence.field: an older version never wins
                state.pop(k, None) if retract else state.__setitem__(k, row)
            elif engine == "first-row":
                state.setdefault(k, row)
            elif engine == "partial-update":
                if retract:
                    state.pop(k, None) if op == "-D" else None
                else:
                    state[k] = {c: (row[c] if row[c] is not None else (old or {}).get(c)) for c in row}
            elif engine == "aggregation":
                merged = {c: (row[c] if row[c] is not None else (old or {}).get(c)) for c in row}
                if old is not None and old["v"] is not None and row["v"] is not None:
                    merged["v"] = old["v"] + row["v"]
                state[k] = merged
    frame = pd.DataFrame(list(state.values()), columns=SCHEMA.names)
    return frame.sort_values(KEY).reset_index(drop=True)


def read(table) -> pd.DataFrame:
    rb = table.new_read_builder()
    df = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pandas()
    assert not df.duplicated(KEY).any(), f"duplicate keys: {df[df.duplicated(KEY, keep=False)]}"
    return df[SCHEMA.names].sort_values(KEY).reset_index(drop=True)


def assert_matches(table, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(read(table), expected, check_dtype=False)


def make_table(tmp_path, shape: str, engine: str = "deduplicate", extra: dict | None = None, name: str = "t"):
    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    catalog.create_database("db", True)
    options = {**SHAPES[shape], "merge-engine": engine, **ENGINES[engine], **(extra or {})}
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"],
                                                                  primary_keys=["id", "dt"], options=options), True)
    return catalog.get_table(f"db.{name}")


def rows(ids, dts, vs, ws=None, ss=None) -> pa.Table:
    n = len(ids)
    return pa.table({"id": ids, "dt": dts, "v": [None if v is None else float(v) for v in vs],
                     "w": ws or [f"w{i}" for i in ids], "s": ss or [0] * n}, schema=SCHEMA)


rng = np.random.default_rng(3)


def insert_batch(n=40):  # 30 distinct keys over two partitions, 10 in-batch repeats
    ids = np.concatenate([np.arange(30), rng.integers(0, 30, n - 30)])
    return rows(ids.tolist(), ["a" if i % 3 else "b" for i in ids], rng.integers(1, 9, n).tolist()), ["+I"] * n


def update_batch():  # updates of old keys (some with null columns), new keys, repeats
    ids = [3, 4, 5, 40, 41, 3, 7, 42, 43, 44, 45]
    ws = ["u3", None, "u5", "n40", "n41", None, "u7", "n42", "n43", "n44", "n45"]
    vs = [30, None, 50, 400, 410, 31, 70, 420, 430, 440, 450]
    return rows(ids, ["a" if i % 3 else "b" for i in ids], vs, ws), ["+U"] * len(ids)


def delete_batch():  # deletes of old and new keys, a delete then re-insert, a delete of a missing key
    ids = [3, 40, 8, 8, 999]
    return (rows(ids, ["a" if i % 3 else "b" for i in ids], [None, None, None, 88, None]),
            ["-D", "-D", "-D", "+I", "-D"])


# ---------------------------------------------------------------- the matrix

@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("engine", list(ENGINES))
def test_insert_update_delete_matrix(tmp_path, monkeypatch, shape, engine):
    table = make_table(tmp_path, shape, engine)
    if shape == "fixed":
        check_fixed_table(table)
    assert base_snapshot_id(table) is None  # fixed: bootstrap is this no-op
    done = []
    for i, batch in enumerate([insert_batch(), update_batch(), delete_batch()]):
        if i == 2 and engine in ("first-row", "partial-update"):
            # Paimon refuses retractions here (without ignore-delete): so do we, before writing anything
            with pytest.raises(ValidationError, match=f"{engine} cannot accept -U/-D"):
                engine_write(table, *batch, identifier=i)
            break
        if i == 2 and engine == "aggregation":
            break  # aggregation retractions need per-function retract support: not in this engine yet
        sid = engine_write(table, *batch, identifier=i)
        assert sid == i + 1
        done.append(batch)
        if engine == "first-row":
            # Paimon's batch scan skips level-0 files of first-row tables until lookup compaction moves
            # them up (pypaimon's own writes too); read the merge of the level-0 files to check them.
            with monkeypatch.context() as m:
                m.setattr(CoreOptions, "batch_scan_skip_level0", lambda self: False)
                assert_matches(table, oracle(engine, done))
        else:
            assert_matches(table, oracle(engine, done))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_sequence_field_orders_within_and_across_batches(tmp_path, shape):
    table = make_table(tmp_path, shape, extra={"sequence.field": "s"})
    first = (rows([1, 2, 2, 3], ["a", "a", "a", "b"], [1, 2, 3, 4], ss=[5, 9, 7, 1]), ["+I"] * 4)
    second = (rows([1, 3, 4], ["a", "b", "a"], [10, 30, 40], ss=[4, 2, 0]), ["+U"] * 3)  # 1 is older: ignored
    engine_write(table, *first, identifier=1)
    engine_write(table, *second, identifier=2)
    got = read(table).set_index("id")["v"].to_dict()
    assert got == {1: 1.0, 2: 2.0, 3: 30.0, 4: 40.0}  # id 2: s=9 beats the later s=7
    assert_matches(table, oracle("deduplicate", [first, second], seq_field="s"))


# ---------------------------------------------------------------- interleaving with pypaimon's writer

def _batches(step: int):
    base = np.arange(step * 7, step * 7 + 25)  # each batch updates ~18 keys of the last and adds 7
    return rows(base.tolist(), ["a" if i % 4 else "b" for i in base], (base * 10 + step).tolist())


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("first", ["engine", "pypaimon"])
def test_interleaves_with_pypaimons_writer(tmp_path, shape, first):
    table = make_table(tmp_path, shape)
    writers = ["engine", "pypaimon"] if first == "engine" else ["pypaimon", "engine"]
    done = []
    for step in range(6):
        batch = _batches(step)
        ops = ["+I"] * batch.num_rows
        if writers[step % 2] == "engine":
            engine_write(table, batch, ops, identifier=step)
        else:
            pypaimon_write(table, batch)
        done.append((batch, ops))
        assert_matches(table, oracle("deduplicate", done))
    if shape == "dynamic":  # one complete HASH file per (partition, bucket), each bucket under the target
        entries = hash_index_entries(table, table.snapshot_manager().get_latest_snapshot())
        data_buckets = {(bf.partition, bf.bucket) for bf in buckets_at(table, table.snapshot_manager()
                                                                       .get_latest_snapshot())}
        assert data_buckets == {(p, b) for p, bs in entries.items() for b in bs}
        keys_per_partition = read(table).groupby("dt").size().to_dict()
        for p, bs in entries.items():
            assert sum(e.index_file.row_count for e in bs.values()) == keys_per_partition[p[0]]
            assert all(e.index_file.row_count <= 4 for e in bs.values())


@pytest.mark.parametrize("shape", list(SHAPES))
def test_deletes_of_keys_pypaimon_wrote(tmp_path, shape):
    table = make_table(tmp_path, shape)
    b1 = (_batches(0), ["+I"] * 25)
    pypaimon_write(table, b1[0])
    ids = [0, 1, 2, 50]  # 50 was never written: its -D must stay invisible, even alone in a new bucket
    b2 = (rows(ids, ["a" if i % 4 else "b" for i in ids], [None] * 4), ["-D"] * 4)
    engine_write(table, *b2, identifier=2)
    b3 = (rows([0, 5], ["b", "a"], [7, 8]), ["+I", "+U"])
    pypaimon_write(table, b3[0])
    assert_matches(table, oracle("deduplicate", [b1, b2, b3]))
