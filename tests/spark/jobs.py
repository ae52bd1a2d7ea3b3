"""Call the Spark jobs' functions with the specs the operators build; results as the dicts XCom holds."""
from __future__ import annotations

import pandas as pd

from airflow_paimon.engine import layout
from airflow_paimon.engine.commit.run import run_commit
from airflow_paimon.engine.specs import AssignWriteResult, AssignWriteSpec, BootstrapSpec, CommitSpec
from airflow_paimon.spark.assign_write import run_assign_and_write
from airflow_paimon.spark.bootstrap import run_bootstrap


class Jobs:
    def __init__(self, spark, warehouse: str, table: str, table_spec: dict | None = None, shards: int = 2):
        self.spark, self.warehouse, self.table = spark, warehouse, table
        self.table_spec, self.shards = table_spec, shards
        self.options = {"warehouse": warehouse}
        self.common = {"catalog_options": self.options, "table": table}
        self.staging_root = layout.default_root(warehouse, "staging")

    def bootstrap(self) -> dict:
        return run_bootstrap(self.spark, BootstrapSpec(**self.common, table_spec=self.table_spec, shards=self.shards,
                                                       index_root=layout.default_root(self.warehouse, "index"))).to_dict()

    def assign_and_write(self, boot: dict, source: dict, run_id: str, row_kind_column: str | None = None) -> dict:
        return run_assign_and_write(self.spark, AssignWriteSpec(
            **self.common, source=source, shards=boot["shards"], base_snapshot_id=boot["base_snapshot_id"],
            index_uri=boot["index_uri"], row_kind_column=row_kind_column, staging_root=self.staging_root,
            dag_id="tests", run_id=run_id)).to_dict()

    def commit(self, written: dict) -> dict:
        spec = CommitSpec.after(AssignWriteResult.from_dict(written), **self.common, staging_root=self.staging_root)
        return run_commit(spec).to_dict()

    def upsert(self, df: pd.DataFrame, run_id: str, tmp_path, row_kind_column: str | None = None):
        path = tmp_path / f"{run_id}.parquet"
        df.to_parquet(path, index=False)
        boot = self.bootstrap()
        written = self.assign_and_write(boot, {"path": str(path)}, run_id, row_kind_column)
        return boot, written, self.commit(written)
