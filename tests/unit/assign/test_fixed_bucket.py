"""Fixed-bucket assignment and BinaryRow hashing against pypaimon's own row_key_extractor, key by key."""
import decimal

import numpy as np
import pyarrow as pa
import pytest
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import DataField, DataTypeParser
from pypaimon.table.row.generic_row import GenericRow, GenericRowSerializer
from pypaimon.table.row.internal_row import RowKind
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor, RowKeyExtractor

from airflow_paimon.engine.codec.binary_row import binary_rows
from airflow_paimon.engine.assign.fixed import base_snapshot_id, check_fixed_table, fixed_buckets
from airflow_paimon.engine.codec.murmur import hash_codes
from airflow_paimon.engine.errors import ValidationError

N = 10_000
rng = np.random.default_rng(20261122)


def _strings(n, lo, hi):
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyzÄßé0123456789"))
    lengths = rng.integers(lo, hi + 1, n)
    return [''.join(rng.choice(alphabet, k)) for k in lengths]


def _timestamps(n, unit):
    micros = rng.integers(-2_000_000_000_000_000, 4_000_000_000_000_000, n)  # 1906 .. 2096
    if unit == "ms":
        micros = micros // 1000 * 1000
    return pa.array(micros, pa.int64()).cast(pa.timestamp("us")).cast(pa.timestamp(unit))


def _decimals(n, precision, scale):
    digits = rng.integers(-10 ** min(precision, 18) + 1, 10 ** min(precision, 18), n)
    values = [decimal.Decimal(int(d) * (10 ** max(0, precision - 18) + 7) % (10 ** precision)).scaleb(-scale)
              * (1 if i % 2 else -1) for i, d in enumerate(digits)]
    return pa.array(values, pa.decimal128(precision, scale))


# (Paimon type, generator of N values) — the supported key types, each with its edge cases mixed in.
COLUMNS = {
    "INT": lambda: pa.array(np.concatenate([[0, -1, 2**31 - 1, -2**31], rng.integers(-2**31, 2**31, N - 4)]),
                            pa.int32()),
    "BIGINT": lambda: pa.array(np.concatenate([[0, -1, 2**63 - 1, -2**63], rng.integers(-2**63, 2**63 - 1, N - 4)]),
                               pa.int64()),
    "SMALLINT": lambda: pa.array(rng.integers(-2**15, 2**15, N), pa.int16()),
    "TINYINT": lambda: pa.array(rng.integers(-128, 128, N), pa.int8()),
    "STRING": lambda: pa.array(_strings(N, 0, 7)),                   # short: inline in the slot
    "VARCHAR(200)": lambda: pa.array(_strings(N, 8, 60)),            # long: variable part
    "CHAR(12)": lambda: pa.array(_strings(N, 0, 24)),                # both, mixed lengths
    "BYTES": lambda: pa.array([bytes(rng.integers(0, 256, k, dtype=np.uint8)) for k in rng.integers(0, 20, N)]),
    "DATE": lambda: pa.array(rng.integers(-30000, 60000, N), pa.int32()).cast(pa.date32()),
    "TIMESTAMP(3)": lambda: _timestamps(N, "ms"),                    # compact
    "TIMESTAMP(6)": lambda: _timestamps(N, "us"),                    # millis + nanoOfMilli
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": lambda: _timestamps(N, "us").cast(pa.timestamp("us", tz="UTC")),
    "DECIMAL(10, 2)": lambda: _decimals(N, 10, 2),                   # compact: unscaled long
    "DECIMAL(38, 6)": lambda: _decimals(N, 38, 6),                   # BigInteger bytes
    "BOOLEAN": lambda: pa.array(rng.integers(0, 2, N).astype(bool)),
    "DOUBLE": lambda: pa.array(np.concatenate([[0.0, -0.0, np.inf, -np.inf], rng.normal(0, 1e6, N - 4)])),
    "FLOAT": lambda: pa.array(rng.normal(0, 1e3, N).astype(np.float32)),
}
COMPOSITES = [["INT", "STRING"], ["BIGINT", "DATE", "VARCHAR(200)"], ["CHAR(12)", "DECIMAL(38, 6)", "TIMESTAMP(6)"],
              ["SMALLINT", "BOOLEAN", "DOUBLE", "DECIMAL(10, 2)", "TINYINT", "TIMESTAMP(3)", "BYTES", "INT"]]


def _fields(types):
    return [DataField(i, f"k{i}", DataTypeParser.parse_atomic_type_sql_string(t)) for i, t in enumerate(types)]


def _pypaimon_hash(values, fields):
    h = RowKeyExtractor._binary_row_hash_code(tuple(values), fields)
    return h - 2**32 if h >= 2**31 else h


def _not_java_pow2(col, types):
    """pypaimon sizes a negative unscaled decimal -2^k one byte longer than Java's BigInteger.toByteArray;
    those rows are checked against Java's rule in their own test."""
    keep = np.ones(len(col[0]), dtype=bool)
    for c, t in zip(col, types):
        if t.startswith("DECIMAL(38"):
            unscaled = [int(v.scaleb(6)) if v is not None else 0 for v in c.to_pylist()]
            keep &= np.array([not (u < 0 and (-u & (-u - 1)) == 0) for u in unscaled])
    return keep


def _assert_same_as_pypaimon(types, columns):
    fields = _fields(types)
    ours = hash_codes(columns, types)
    rows = binary_rows(columns, types)
    keep = _not_java_pow2(columns, types)
    pylists = [c.to_pylist() for c in columns]
    for i in np.nonzero(keep)[0]:
        values = [p[i] for p in pylists]
        expected = _pypaimon_hash(values, fields)
        if ours[i] != expected:
            ref = GenericRowSerializer.to_bytes(GenericRow(values, fields, RowKind.INSERT))[4:]
            pytest.fail(f"{types} row {values}: hash {ours[i]} != pypaimon {expected}; "
                        f"bytes {rows.row(i).hex()} vs {ref.hex()}")


@pytest.mark.parametrize("ptype", list(COLUMNS))
def test_hash_of_every_key_type_matches_pypaimon(ptype):
    _assert_same_as_pypaimon([ptype], [COLUMNS[ptype]()])


@pytest.mark.parametrize("types", COMPOSITES, ids=["+".join(t) for t in COMPOSITES])
@pytest.mark.slow
def test_hash_of_composite_keys_matches_pypaimon(types):
    _assert_same_as_pypaimon(types, [COLUMNS[t]() for t in types])


def test_nulls_in_a_bucket_key_match_pypaimon():
    types = ["INT", "VARCHAR(200)", "DECIMAL(38, 6)", "TIMESTAMP(6)", "STRING"]
    columns = []
    for t in types:
        col = COLUMNS[t]()
        mask = rng.random(len(col)) < 0.3
        columns.append(pa.array(col.to_pylist(), col.type, mask=mask))
    _assert_same_as_pypaimon(types, columns)


def test_large_negative_decimal_follows_java_big_integer():
    # Java: new BigInteger("-128").toByteArray() == {0x80}; one byte, not two.
    col = pa.array([decimal.Decimal(-128), decimal.Decimal(-129), decimal.Decimal(127)], pa.decimal128(20, 0))
    rows = binary_rows([col], ["DECIMAL(20, 0)"])
    assert rows.row(0)[16:24] == bytes([0x80]) + bytes(7)
    assert rows.row(0)[8:16] == ((16 << 32) | 1).to_bytes(8, "little")
    assert rows.row(1)[16:18] == bytes([0xFF, 0x7F]) and rows.row(1)[8:12] == (2).to_bytes(4, "little")
    assert rows.row(2)[16:17] == bytes([0x7F])


def _table(tmp_path, name, schema, primary_keys, options, partition_keys=()):
    catalog = CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    catalog.create_database("db", True)
    catalog.create_table(f"db.{name}", Schema.from_pyarrow_schema(schema, partition_keys=list(partition_keys),
                                                                  primary_keys=primary_keys, options=options), True)
    return catalog.get_table(f"db.{name}")


@pytest.mark.parametrize("buckets", [1, 7, 64])
def test_fixed_buckets_match_pypaimon_extractor(tmp_path, buckets):
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("name", pa.string(), False),
                        pa.field("dt", pa.string(), False), pa.field("v", pa.float64())])
    table = _table(tmp_path, "t", schema, ["id", "name", "dt"], {"bucket": str(buckets)}, ["dt"])
    check_fixed_table(table)
    data = pa.record_batch([COLUMNS["BIGINT"](), pa.array(_strings(N, 0, 30)), pa.array(["2026-01-01"] * N),
                            pa.array(rng.random(N))], schema=schema)
    expected = FixedBucketRowKeyExtractor(table.table_schema)._extract_buckets_batch(data)
    ours = fixed_buckets(table, data)
    assert ours.tolist() == expected
    assert set(ours.tolist()) == set(range(buckets))  # trimmed key (id, name) spreads over every bucket
    assert base_snapshot_id(table) is None


def test_bucket_key_option_and_mod_function(tmp_path):
    schema = pa.schema([pa.field("a", pa.int32(), False), pa.field("b", pa.string(), False)])
    table = _table(tmp_path, "bk", schema, ["a", "b"], {"bucket": "5", "bucket-key": "b"})
    data = pa.record_batch([COLUMNS["INT"](), pa.array(_strings(N, 0, 12))], schema=schema)
    assert fixed_buckets(table, data).tolist() == FixedBucketRowKeyExtractor(
        table.table_schema)._extract_buckets_batch(data)
    mod = _table(tmp_path, "mod", schema, ["a", "b"], {"bucket": "5", "bucket-key": "a",
                                                         "bucket-function.type": "mod"})
    check_fixed_table(mod)
    assert fixed_buckets(mod, data).tolist() == np.mod(data.column("a").to_numpy().astype(np.int64), 5).tolist()


@pytest.mark.parametrize("options,error,message", [
    ({"bucket": "-1"}, ValidationError, "option 'bucket', value -1: a fixed-bucket write needs bucket > 0"),
    ({"bucket": "4", "bucket-function.type": "hive"}, ValidationError, "option 'bucket-function.type', value 'hive'"),
    ({"bucket": "4", "bucket-key": "b", "bucket-function.type": "mod"}, ValidationError, "exactly one INT or BIGINT"),
])
def test_unsupported_fixed_bucket_options_are_refused(tmp_path, options, error, message):
    schema = pa.schema([pa.field("a", pa.int32(), False), pa.field("b", pa.string(), False)])
    table = _table(tmp_path, "bad", schema, ["a", "b"], options)
    with pytest.raises(error, match=message):
        check_fixed_table(table)
