"""Tables of every shape written in several batches, an in-process compaction, and read-back checks with
pypaimon and pypaimon-rust — shared by the compaction and maintenance tests."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.files.scan import latest_snapshot, live_entries
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, upsert
from oracle import expected_upsert, read_table

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]


def batches(n: int, seed: int = 3, keys: int = 400, rows: int = 150) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    return [pd.DataFrame({"id": rng.choice(keys, rows, replace=False).astype("int64"),
                          "dt": rng.choice(list("abc"), rows), "v": rng.random(rows).round(6)}) for _ in range(n)]


def cross_partition_table(warehouse, data, options=None):
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                                "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "60", **(options or {})}})
    get_or_create_table(opts, "db.t", spec)
    for i, batch in enumerate(data):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(batch, schema=spec.arrow_schema(), preserve_index=False), run_id=f"r{i}")
    return get_table(opts, "db.t"), expected_upsert(data, "id")


def pypaimon_written_table(warehouse, data, options, primary_keys=("id", "dt")):
    """Tables pypaimon writes itself: fixed- and dynamic-bucket (primary key holds the partition), or with
    ``write.native.enabled`` any shape pypaimon-rust writes."""
    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": list(primary_keys), "partition_keys": ["dt"],
                                "options": options})
    get_or_create_table(opts, "db.t", spec)
    for batch in data:
        builder = get_table(opts, "db.t").new_batch_write_builder()
        write = builder.new_write()
        write.write_arrow(pa.Table.from_pandas(batch, schema=spec.arrow_schema(), preserve_index=False))
        builder.new_commit().commit(write.prepare_commit())
        write.close()
    expected = pd.concat(data).drop_duplicates(list(primary_keys), keep="last")
    return get_table(opts, "db.t"), expected.sort_values(["id", "dt"]).reset_index(drop=True)


def rust_read(warehouse) -> pd.DataFrame:
    from pypaimon_rust.datafusion import SQLContext
    ctx = SQLContext()
    ctx.register_catalog("p", {"warehouse": warehouse})
    ctx.set_current_catalog("p")
    return pa.Table.from_batches(ctx.sql("SELECT * FROM db.t")).to_pandas()


def assert_reads(table, warehouse, expected, keys, rust=True):
    """pypaimon and pypaimon-rust both read exactly the oracle's rows, no key twice."""
    for actual in (read_table(table), *([rust_read(warehouse)] if rust else [])):
        assert not actual.duplicated(keys).any()
        actual = actual[list(expected.columns)].sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(actual, expected.sort_values(keys).reset_index(drop=True), check_dtype=False)


def bucket_files(table) -> dict:
    groups = defaultdict(list)
    for e in live_entries(table, latest_snapshot(table)):
        groups[(tuple(e.partition.values), e.bucket)].append(e)
    return groups
