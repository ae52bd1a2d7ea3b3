"""DAGs of tests/dag/test_rollback_dag.py: a write whose table is rolled back between its assign-and-write and its
commit (spark-submit jobs, the rollback and the writes after it in the task process), a rollback alone, and a
write whose commit's rewrite is killed part-way (``rewrite_cut_off``)."""
from __future__ import annotations

import pendulum
from airflow.sdk import DAG, BaseOperator

from airflow_paimon.operators.lifecycle import PaimonRollbackOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

START = pendulum.datetime(2026, 1, 1, tz="UTC")


class InProcessWritesOperator(BaseOperator):
    """Other writers committing between the rollback and the commit: each of ``params.batches`` (lists of row
    dicts) written through the engine in this process (tests/local_runner.py), as its own run. Then, with
    ``params.arm``, creates that file: the one kill of a crash point armed with AIRFLOW_PAIMON_CRASH_ONCE."""

    def execute(self, context) -> list:
        import pandas as pd
        import pyarrow as pa

        from pypaimon.schema.data_types import PyarrowFieldParser

        from airflow_paimon.engine.table.table import get_table
        from airflow_paimon.hooks.paimon import PaimonHook
        from local_runner import bootstrap, upsert

        hook = PaimonHook()
        table = context["params"]["table"]
        fields = get_table(hook.catalog_options(), table).table_schema.fields
        arrow_schema = PyarrowFieldParser.from_paimon_schema(fields)
        done = []
        for i, rows in enumerate(context["params"]["batches"]):
            source = pa.Table.from_pandas(pd.DataFrame(rows), schema=arrow_schema, preserve_index=False)
            done.append(upsert(bootstrap(hook.catalog_options(), table, hook.index_root(), 2), source,
                               run_id=f"{context['run_id']}-other-{i}")[0])
        if context["params"].get("arm"):
            open(context["params"]["arm"], "w").close()
        return done


def rollback_between_dag(dag_id: str, max_rewrites: int) -> DAG:
    """The write, its table rolled back and written by others between its assign-and-write and its commit; the
    commit with ``max_rewrites``. Retries 2: a refused commit must fail at once, not be retried into the same
    refusal."""
    with DAG(dag_id, schedule=None, start_date=START,
             params={"table": "db.t", "source": "", "to_snapshot": 1, "batches": []},
             default_args={"retries": 2}) as dag:
        (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}", shards=2)
         >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                         source="{{ params.source }}")
         >> PaimonRollbackOperator(task_id="rollback", table="{{ params.table }}",
                                   to_snapshot="{{ params.to_snapshot }}")
         >> InProcessWritesOperator(task_id="other_writers")
         >> PaimonCommitOperator(task_id="commit", table="{{ params.table }}", max_rewrites=max_rewrites))
    return dag


rollback_between = rollback_between_dag("test_rollback_between_write_and_commit", max_rewrites=0)
rollback_healed = rollback_between_dag("test_rollback_between_write_and_commit_healed", max_rewrites=3)

with DAG("test_rollback_to", schedule=None, start_date=START, params={"table": "db.t", "to_snapshot": 1},
         default_args={"retries": 2}) as rollback_to:
    PaimonRollbackOperator(task_id="rollback", table="{{ params.table }}", to_snapshot="{{ params.to_snapshot }}")

# Other writers commit keys of the run between its assign-and-write and its commit, so the commit writes the batch
# again; the test kills that rewrite's assign-and-write once (AIRFLOW_PAIMON_CRASH_AT/_ONCE): the commit task's
# retry finds the run's staging emptied by it and writes the batch again itself
with DAG("test_rewrite_cut_off", schedule=None, start_date=START,
         params={"table": "db.t", "source": "", "batches": [], "arm": ""},
         default_args={"retries": 1, "retry_delay": pendulum.duration(seconds=0)}) as rewrite_cut_off:
    (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}", shards=2)
     >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                     source="{{ params.source }}")
     >> InProcessWritesOperator(task_id="other_writers")
     >> PaimonCommitOperator(task_id="commit", table="{{ params.table }}"))
