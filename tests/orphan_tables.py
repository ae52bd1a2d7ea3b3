"""The small cross-partition table and two batches the orphan-file tests write (tests/unit/maintenance): a few
rows, a key that moves partition, so a write stages and commits files in two partitions."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.table.table import TableSpec

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
FIRST = pd.DataFrame({"id": [1, 2, 3], "dt": list("aab"), "v": [1.0, 2.0, 3.0]})
SECOND = pd.DataFrame({"id": [1, 4], "dt": list("ba"), "v": [10.0, 4.0]})


def arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, schema=SPEC.arrow_schema(), preserve_index=False)
