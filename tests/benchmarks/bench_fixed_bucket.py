"""Throughput of the vectorised fixed-bucket assignment vs pypaimon's per-row extractor (not a test).

    .venv/bin/python tests/benchmarks/bench_fixed_bucket.py [rows]
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.assign.fixed import bucket_of_hash
from airflow_paimon.engine.codec.murmur import hash_codes


def _keys(n: int, rng) -> dict[str, tuple[list, list]]:
    ints = pa.array(rng.integers(-2**62, 2**62, n), pa.int64())
    short = pa.array(rng.integers(0, 10**6, n)).cast(pa.string())                      # <= 7 bytes
    long = pc.binary_join_element_wise("customer-", short, "-eu-west", "")     # > 7 bytes
    dates = pa.array(rng.integers(0, 30000, n), pa.int32()).cast(pa.date32())
    return {
        "bigint": ([ints], ["BIGINT"]),
        "int": ([ints.cast(pa.int32(), safe=False)], ["INT"]),
        "string<=7": ([short], ["STRING"]),
        "string>7": ([long], ["STRING"]),
        "bigint+date+string": ([ints, dates, long], ["BIGINT", "DATE", "STRING"]),
        "decimal(38,6)": ([pa.array(rng.integers(-10**15, 10**15, n)).cast(pa.decimal128(38, 6))], ["DECIMAL(38, 6)"]),
    }


def _pypaimon_rate(columns, types, n_sample=20_000) -> float:
    from pypaimon.schema.data_types import DataField, DataTypeParser
    from pypaimon.write.row_key_extractor import RowKeyExtractor, _bucket_from_hash
    fields = [DataField(i, f"k{i}", DataTypeParser.parse_atomic_type_sql_string(t)) for i, t in enumerate(types)]
    rows = list(zip(*(c.slice(0, n_sample).to_pylist() for c in columns)))
    t0 = time.perf_counter()
    for r in rows:
        _bucket_from_hash(RowKeyExtractor._binary_row_hash_code(r, fields), 16)
    return n_sample / (time.perf_counter() - t0)


def main(n: int) -> None:
    rng = np.random.default_rng(0)
    print(f"{n:,} keys per run, best of 3; pypaimon per-row extractor on 20,000 keys for comparison")
    print(f"{'key':<22}{'ours keys/s':>16}{'pypaimon keys/s':>18}{'speed-up':>10}")
    for name, (columns, types) in _keys(n, rng).items():
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            bucket_of_hash(hash_codes(columns, types), 16)
            best = min(best, time.perf_counter() - t0)
        ours, theirs = n / best, _pypaimon_rate(columns, types)
        print(f"{name:<22}{ours:>16,.0f}{theirs:>18,.0f}{ours / theirs:>9.0f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
