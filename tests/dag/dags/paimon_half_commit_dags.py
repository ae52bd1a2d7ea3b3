"""DAG of tests/dag/test_half_commit_dag.py: a write whose commit task is killed between its APPEND and its COMPACT
(spark-submit jobs), a full compaction of the table landing before the task's retry."""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

START = pendulum.datetime(2026, 1, 1, tz="UTC")


class KilledOnceCommitOperator(PaimonCommitOperator):
    """The commit, its first try's job killed (SIGKILL) at the crash point ``params.crash_at``
    (AIRFLOW_PAIMON_CRASH_AT set for that job only); then, before the retry, a full compaction of the table lands
    (the engine's, in this process), as a compaction DAG's would."""

    def execute(self, context):
        from airflow_paimon.engine.faults import CRASH_AT

        if context["ti"].try_number > 1:
            return super().execute(context)
        os.environ[CRASH_AT] = context["params"]["crash_at"]
        try:
            return super().execute(context)
        except Exception:
            from airflow_paimon.engine.table.table import get_table
            from airflow_paimon.hooks.paimon import PaimonHook
            from local_runner import compact

            compact(get_table(PaimonHook().catalog_options(), self.table), run_id="compaction", full=True,
                    scope="table")
            raise
        finally:
            del os.environ[CRASH_AT]


# retries 2: a refusal must fail at once (try 2 of 3), not be retried into the same refusal
with DAG("test_half_commit", schedule=None, start_date=START,
         params={"table": "db.t", "source": "", "crash_at": "commit.between_append_and_compact"},
         default_args={"retries": 2, "retry_delay": pendulum.duration(seconds=0)}) as half_commit:
    (PaimonBootstrapIndexOperator(task_id="bootstrap_index", table="{{ params.table }}", shards=2)
     >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table="{{ params.table }}",
                                     source="{{ params.source }}")
     >> KilledOnceCommitOperator(task_id="commit", table="{{ params.table }}"))
