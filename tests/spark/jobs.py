"""Call the Spark jobs' functions the way the operators' specs do."""
from __future__ import annotations

import pandas as pd

from airflow_paimon.spark.assign_write import run_assign_and_write
from airflow_paimon.spark.bootstrap import run_bootstrap
from airflow_paimon.spark.commit import run_commit


class Jobs:
    def __init__(self, spark, warehouse: str, table: str, table_spec: dict | None = None, shards: int = 2):
        self.spark, self.warehouse, self.table = spark, warehouse, table
        self.table_spec, self.shards = table_spec, shards
        self.options = {"warehouse": warehouse}

    def bootstrap(self) -> dict:
        return run_bootstrap(self.spark, {"catalog_options": self.options, "table": self.table,
                                          "table_spec": self.table_spec, "shards": self.shards,
                                          "index_root": f"{self.warehouse}/.airflow-paimon/index"})

    def assign_and_write(self, boot: dict, source: dict, run_id: str, row_kind_column: str | None = None) -> dict:
        return run_assign_and_write(self.spark, {
            "catalog_options": self.options, "table": self.table, "source": source, "shards": boot["shards"],
            "base_snapshot_id": boot["base_snapshot_id"], "index_uri": boot["index_uri"],
            "row_kind_column": row_kind_column,
            "staging_root": f"{self.warehouse}/.airflow-paimon/staging", "dag_id": "tests", "run_id": run_id})

    def commit(self, written: dict) -> dict:
        return run_commit({"catalog_options": self.options, "table": self.table,
                           **{k: written[k] for k in ("staging_uri", "commit_user", "commit_identifier",
                                                      "base_snapshot_id")}})

    def upsert(self, df: pd.DataFrame, run_id: str, tmp_path, row_kind_column: str | None = None):
        path = tmp_path / f"{run_id}.parquet"
        df.to_parquet(path, index=False)
        boot = self.bootstrap()
        written = self.assign_and_write(boot, {"path": str(path)}, run_id, row_kind_column)
        return boot, written, self.commit(written)
