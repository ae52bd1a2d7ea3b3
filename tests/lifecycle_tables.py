"""One cross-partition table written run by run in-process, rolled back and written again
(tests/unit/table/test_lifecycle.py, tests/unit/commit/test_history.py)."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.table.table import TableSpec
from local_runner import bootstrap, upsert

SCHEMA = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
          "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}}
SPEC = TableSpec.from_dict(SCHEMA)
RUNS = [pd.DataFrame({"id": [1, 2, 3, 4], "dt": list("aabb"), "v": [1.0, 2, 3, 4]}),
        pd.DataFrame({"id": [2, 5, 6], "dt": list("bab"), "v": [20.0, 5, 6]}),
        pd.DataFrame({"id": [1, 6, 7], "dt": list("bba"), "v": [10.0, 60, 7]})]
# After rolling back to run 1 (they take the ids 2 and 3 again): key 100 is new (no index of the old snapshots
# knows it), then moves partition.
AFTER = [pd.DataFrame({"id": [100, 3, 8], "dt": list("aab"), "v": [100.0, 30, 8]}),
         pd.DataFrame({"id": [100, 4, 8], "dt": list("bab"), "v": [1000.0, 40, 80]})]


def arrow(df, spec: TableSpec = SPEC) -> pa.Table:
    return pa.Table.from_pandas(df, schema=spec.arrow_schema(), preserve_index=False)


def write(opts, index_root, runs, first=0, spec: TableSpec = SPEC) -> list[int]:
    """Each frame of ``runs`` as its own DAG run (r{first}, r{first+1}, ...) into db.t; their snapshot ids."""
    return [upsert(bootstrap(opts, "db.t", index_root, 2), arrow(df, spec), run_id=f"r{first + i}")[0]
            for i, df in enumerate(runs)]
