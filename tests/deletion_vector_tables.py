"""Deletion-vector tables written by the engine in-process (tests/unit/write/test_deletion_vectors.py, tests/java)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.files.scan import live_entries
from airflow_paimon.engine.table.table import TableSpec
from airflow_paimon.engine.files.deletion_vectors import _vector_entries
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


def assert_vectors_of_live_files(table, snapshot):
    """One deletion-vector index file per bucket, marking only files live in that bucket (none of the replaced
    partitions' old files, whose vectors the OVERWRITE drops)."""
    live = {(tuple(e.partition.values), e.bucket, e.file.file_name) for e in live_entries(table, snapshot)}
    entries = _vector_entries(table, snapshot.index_manifest) if snapshot.index_manifest else {}
    for (partition, bucket), found in entries.items():
        assert len(found) == 1, (partition, bucket, found)
        assert all((partition, bucket, name) in live for name in found[0].index_file.dv_ranges), (partition, bucket)
