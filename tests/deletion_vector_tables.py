"""Deletion-vector tables written by the engine in-process (tests/unit/test_deletion_vectors.py, tests/java)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.table import TableSpec
from local_runner import bootstrap, upsert

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
DV = {"deletion-vectors.enabled": "true", "num-levels": "3"}  # few levels: buckets are rewritten every third run
CROSS = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                             "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "40", **DV}})
FIXED = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["dt", "id"], "partition_keys": ["dt"],
                             "options": {"bucket": "2", **DV}})
KINDS = np.array(["+I", "-U", "+U", "-D"], dtype=object)


def runs(seed: int, n: int = 7):
    rng = np.random.default_rng(seed)
    for b in range(n):
        size = 150
        frame = pd.DataFrame({"id": rng.integers(0, 250, size), "dt": rng.choice(["a", "b"], size),
                              "v": rng.random(size).round(3)})
        yield frame, np.where(rng.random(size) < (0.12 if b else 0), 3, 0).astype(np.int8)


def write(warehouse, spec, frame, kinds, run_id):
    ctx = bootstrap({"warehouse": warehouse}, "db.t", warehouse + "/.index", 2)
    return upsert(ctx, pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), run_id,
                  row_kinds=kinds)
