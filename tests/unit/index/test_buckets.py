import numpy as np
import pyarrow as pa

from airflow_paimon.engine.index.buckets import BucketAssigner, count_buckets


def reference_assign(shard, shards, target, counts, partitions):
    """Paimon's BucketAssigner.assignBucket, one key at a time (the Java loop, as the oracle)."""
    counts = {p: dict(b) for p, b in counts.items()}
    out = []
    for p in partitions:
        buckets = counts.setdefault(p, {})
        for b in sorted(buckets):
            if b % shards == shard and buckets[b] < target:
                buckets[b] += 1
                out.append(b)
                break
        else:
            b = 0
            while not (b % shards == shard and b not in buckets):
                b += 1
            buckets[b] = 1
            out.append(b)
    return out, counts


def test_matches_paimon_assigner_loop():
    rng = np.random.default_rng(1)
    start = {"a": {0: 3, 2: 1, 3: 5, 4: 2}, "b": {1: 4}}
    partitions = list(rng.choice(["a", "b", "c"], size=200))
    expected, expected_counts = reference_assign(0, 2, 5, start, partitions)
    assigner = BucketAssigner(0, 2, 5, {p: {str(b): c for b, c in bs.items()} for p, bs in start.items()})
    assert assigner.assign(pa.array(partitions)).tolist() == expected
    assert {p: dict(bs) for p, bs in assigner.counts.items()} == expected_counts


def test_only_owned_buckets_are_used():
    assigner = BucketAssigner(shard=2, shards=3, target_row_num=2)
    buckets = assigner.assign(pa.array(["x"] * 7))
    assert buckets.tolist() == [2, 2, 5, 5, 8, 8, 11]


def test_decrement_frees_room():
    assigner = BucketAssigner(0, 1, 2, {"x": {"0": 2}})
    assigner.decrement(pa.array(["x"]), np.array([0]))
    assert assigner.assign(pa.array(["x"])).tolist() == [0]


def test_count_buckets():
    assert count_buckets(pa.array(["a", "a", "b"]), np.array([1, 1, 0])) == {"a": {"1": 2}, "b": {"0": 1}}
