"""DAGs of the lifecycle tests (tests/dag/test_lifecycle_dag.py): create, write, tag; alter; roll back — each
operator twice in one DAG run (a second task with the same arguments), as a retry would find the work done."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.lifecycle import (PaimonAlterTableOperator, PaimonCreateTableOperator,
                                                PaimonCreateTagOperator, PaimonExpirePartitionsOperator,
                                                PaimonRollbackOperator)
from airflow_paimon.operators.paimon import PaimonCommitOperator

SCHEMA = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
          "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}}
START = pendulum.datetime(2026, 1, 1, tz="UTC")


class InProcessCommitOperator(PaimonCommitOperator):
    """A commit task of the DAG run without Spark: writes ``params.batch`` (a list of row dicts) through the
    engine in this process (tests/local_runner.py) and returns the commit's result, so the tag task downstream
    finds this run's snapshot as it finds a real PaimonCommitOperator's."""

    def execute(self, context) -> dict:
        import pandas as pd
        import pyarrow as pa

        from airflow_paimon.engine.table.table import TableSpec
        from airflow_paimon.hooks.paimon import PaimonHook
        from local_runner import bootstrap, upsert

        hook = PaimonHook(self.paimon_conn_id)
        batch = pd.DataFrame(context["params"]["batch"])
        source = pa.Table.from_pandas(batch, schema=TableSpec.from_dict(SCHEMA).arrow_schema(), preserve_index=False)
        ctx = bootstrap(hook.catalog_options(), self.table, hook.index_root(), 2)
        snapshot_id, _ = upsert(ctx, source, run_id=context["run_id"])
        return {"table": self.table, "snapshot_id": snapshot_id}


with DAG("test_lifecycle_day", schedule=None, start_date=START, params={"batch": []},
         default_args={"retries": 2}) as day:
    create = PaimonCreateTableOperator(task_id="create", table="db.t", table_schema=SCHEMA)
    write = InProcessCommitOperator(task_id="write", table="db.t")
    tag = PaimonCreateTagOperator(task_id="tag", table="db.t", tag="day-{{ ds }}")
    tag_again = PaimonCreateTagOperator(task_id="tag_again", table="db.t", tag="day-{{ ds }}",
                                        upstream_output=write.output)
    create >> write >> tag >> tag_again

with DAG("test_lifecycle_alter", schedule=None, start_date=START, default_args={"retries": 2}) as alter:
    changes = {"add_columns": [["note", "STRING"]], "widen_columns": [["v", "DOUBLE"]],
               "set_options": {"snapshot.num-retained.min": "3"}}
    PaimonAlterTableOperator(task_id="alter", table="db.t", **changes) >> PaimonAlterTableOperator(
        task_id="alter_again", table="db.t", **changes)

with DAG("test_lifecycle_refused", schedule=None, start_date=START,
         params={"set_options": {"changelog-producer": "lookup"}}, default_args={"retries": 2},
         render_template_as_native_obj=True) as refused:
    PaimonAlterTableOperator(task_id="alter", table="db.t", set_options="{{ params.set_options }}")

with DAG("test_lifecycle_rollback", schedule=None, start_date=START, params={"to_tag": ""},
         default_args={"retries": 2}) as roll_back:
    PaimonRollbackOperator(task_id="rollback", table="db.t", to_tag="{{ params.to_tag }}") >> PaimonRollbackOperator(
        task_id="rollback_again", table="db.t", to_tag="{{ params.to_tag }}")

# daily: the partitions more than 2 days older than the run's data interval end go, once per run
with DAG("test_lifecycle_expire", schedule="@daily", start_date=START, default_args={"retries": 2}) as expire:
    PaimonExpirePartitionsOperator(task_id="expire", table="db.e", expiration_time="2 d") >> \
        PaimonExpirePartitionsOperator(task_id="expire_again", table="db.e", expiration_time="2 d")
