import datetime

import numpy as np
import pyarrow as pa
import pytest

from airflow_paimon.engine.codec.keys import (decode_partition, encode_keys, encode_partition_values,
                                              encode_partitions, sort_keys)


def test_int_keys_encode_in_numeric_order():
    values = [-(2**62), -5, -1, 0, 1, 7, 2**40]
    keys = encode_keys(pa.table({"id": pa.array(values, pa.int64())}), ["id"]).to_pylist()
    assert keys == sorted(keys)
    assert len(set(keys)) == len(values)


def test_composite_keys_do_not_collide_across_column_boundaries():
    t = pa.table({"a": ["ab", "a"], "b": ["c", "bc"]})
    keys = encode_keys(t, ["a", "b"]).to_pylist()
    assert keys[0] != keys[1]


@pytest.mark.parametrize("column", [
    pa.array([1, 2, 3], pa.int32()),
    pa.array(["x", "y", "z"]),
    pa.array([datetime.date(2024, 1, d) for d in (1, 2, 3)]),
    pa.array([datetime.datetime(2024, 1, 1, h) for h in (1, 2, 3)], pa.timestamp("us")),
])
def test_every_key_type_encodes_distinct_values(column):
    keys = encode_keys(pa.table({"k": column}), ["k"])
    assert len(set(keys.to_pylist())) == 3


def test_partition_round_trip_with_nulls_and_types():
    types = [pa.string(), pa.date32(), pa.int32()]
    t = pa.table({"s": ["a", None], "d": [datetime.date(2024, 5, 6), None], "i": pa.array([3, None], pa.int32())})
    encoded = encode_partitions(t, ["s", "d", "i"])
    assert decode_partition(encoded[0].as_py(), types) == ("a", datetime.date(2024, 5, 6), 3)
    assert decode_partition(encoded[1].as_py(), types) == (None, None, None)
    assert encode_partition_values(("a", datetime.date(2024, 5, 6), 3), types) == encoded[0].as_py()


@pytest.mark.parametrize("table, fields", [
    (pa.table({"id": pa.array(np.random.default_rng(1).integers(-2**62, 2**62, 5000), pa.int64())}), ["id"]),
    (pa.table({"a": pa.array(np.random.default_rng(2).integers(-3, 3, 5000), pa.int32()),
               "b": pa.array(np.random.default_rng(3).integers(0, 10**9, 5000), pa.int64())}), ["a", "b"]),
    (pa.table({"s": pa.array([f"k{i * 7919 % 5003}" for i in range(5000)])}), ["s"]),
])
def test_key_order_is_byte_order(table, fields):
    keys = encode_keys(table, fields)
    ordered = sort_keys(keys)
    assert ordered.keys == sorted(keys.to_pylist())
    assert [keys[int(i)].as_py() for i in ordered.order] == ordered.keys
    assert ordered.duplicated == (len(set(keys.to_pylist())) < len(keys))


def test_duplicates_are_found_in_fixed_and_varying_width_keys():
    for values in ([3, 1, 3], ["x", "yy", "x"]):
        keys = encode_keys(pa.table({"k": values}), ["k"])
        assert sort_keys(keys).duplicated


def test_partition_encoding_is_injective_and_round_trips():
    rows = [("a\x1fb", "c"), ("a", "b\x1fc"), (None, "x"), ("\x00", "x"), ("", "x"), ("null", "x"), ("None", "x"),
            ("a\x1e", "_"), ("a", "\x1e_"), ("a\x1e_", ""), ("=", None), ("", None)]
    t = pa.table({"p": pa.array([r[0] for r in rows], pa.string()), "q": pa.array([r[1] for r in rows], pa.string())})
    encoded = encode_partitions(t, ["p", "q"]).to_pylist()
    assert len(set(encoded)) == len(rows)
    types = [pa.string(), pa.string()]
    assert [decode_partition(e, types) for e in encoded] == rows
    assert [encode_partition_values(r, types) for r in rows] == encoded
    single = encode_partitions(t, ["p"]).to_pylist()
    assert len(set(single)) == len({r[0] for r in rows})
    assert [decode_partition(e, [pa.string()]) for e in single] == [(r[0],) for r in rows]
