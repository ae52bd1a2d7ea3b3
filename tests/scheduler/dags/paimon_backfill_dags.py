"""The DAGs the backfill and concurrency tests run on a real scheduler (tests/scheduler/test_reruns.py).

- ``daily_forward``, ``daily_wide``, ``daily_backwards``: the daily upsert, each into a table of its own, a
  cross-partition table (primary key ``id``, partitioned by ``dt``) with a row-kind column ``op``; a day's source
  is ``<params.sources>/<dag_id>/<ds>.parquet``. The tests backfill them.
- ``race_a``, ``race_b``: two DAGs upserting one table. Between assign-and-write and commit each run waits until
  the other DAG's run of the same round has staged its write too (``params.barrier``), so both always write from
  the same base and one of them always finds the other's commit in its way.
- ``daily_vectors`` and ``compaction``: a daily upsert into a deletion-vector table and a full compaction of it;
  the compaction runs after the upsert staged and before it commits, so the upsert always finds a COMPACT
  snapshot in its way (a deletion-vector write marks its base's files: it is written again).
- ``interval_daily``: a daily upsert on a data-interval timetable (``schedule="@daily"`` with
  ``create_cron_data_intervals``), scheduled for 2026-01-01 only; a manual run may bring its own ``source``.
- ``asset_consumer``: scheduled on the asset ``paimon-test://feed``, upserting ``SOURCES/asset_consumer/feed.parquet``
  into the same table as ``reconcile``.
- ``hourly`` (a trigger timetable, 00:00-02:00 of 2026-01-01) and ``reconcile`` (``DeltaDataIntervalTimetable`` of one
  day, 2026-01-01 and 01-02): two DAGs upserting one table.
  Each of these three waits until its source file exists (``SOURCES``, the scheduler fixture's sources folder),
  as a DAG with a sensor on its landing zone does: the test decides when a scheduled run goes on."""
from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Asset, task
from airflow.sdk.definitions.timetables.interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
from airflow.sdk.definitions.timetables.trigger import CronTriggerTimetable

from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.paimon import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                             PaimonCommitOperator)

SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
        "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}}
START = pendulum.datetime(2026, 3, 1, tz="UTC")
LAST = START.add(days=4)  # the 5 days tests/scheduler/test_reruns.py backfills
# bootstrap-index of a backfill's first runs may race to create the table: a retry finds it created
RETRIES = {"retries": 2, "retry_delay": pendulum.duration(seconds=2)}


VECTORS = {"columns": SPEC["columns"], "primary_keys": ["id"],
           "options": {"bucket": "2", "deletion-vectors.enabled": "true"}}


def write(dag_id: str, table: str, source: str, between=None, spec: dict = SPEC) -> DAG:
    daily = "daily" in dag_id
    # the daily DAGs end with the backfilled days: unpaused (a backfill runs only then), the scheduler starts no
    # run of its own (catchup off and the latest day past the end)
    with DAG(dag_id, schedule="@daily" if daily else None, start_date=START, end_date=LAST if daily else None,
             catchup=False, max_active_runs=16, params={"sources": "", "source": "", "barrier": ""},
             default_args=RETRIES) as dag:
        steps = [PaimonBootstrapIndexOperator(task_id="bootstrap_index", table=table, table_schema=spec, shards=2),
                 PaimonAssignAndWriteOperator(task_id="assign_and_write", table=table, source=source,
                                              row_kind_column="op")]
        if between is not None:
            steps.append(between())
        steps.append(PaimonCommitOperator(task_id="commit", table=table))
        for upstream, downstream in zip(steps, steps[1:]):
            upstream >> downstream
    return dag


for name in ("daily_forward", "daily_wide", "daily_backwards"):
    globals()[name] = write(name, f"db.{name}", "{{ params.sources }}/" + name + "/{{ ds }}.parquet")


def barrier(mark: str | None, wait_for: str | None, task_id: str = "barrier"):
    """A task that marks ``mark`` done and waits (≤ 120 s) until ``wait_for`` is, in the run's ``params.barrier``
    folder."""
    @task(task_id=task_id)
    def meet(**context) -> None:
        folder = context["params"]["barrier"]
        if mark:
            open(os.path.join(folder, mark), "w").close()
        deadline = time.monotonic() + 120
        while wait_for and not os.path.exists(os.path.join(folder, wait_for)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{wait_for} was not done within 120 s")
            time.sleep(0.5)

    return meet()


race_a = write("race_a", "db.raced", "{{ params.source }}", lambda: barrier("race_a", "race_b"))
race_b = write("race_b", "db.raced", "{{ params.source }}", lambda: barrier("race_b", "race_a"))
daily_vectors = write("daily_vectors", "db.vectors", "{{ params.source }}", lambda: barrier("staged", "compacted"),
                      spec=VECTORS)

with DAG("compaction", schedule=None, start_date=START, catchup=False, max_active_runs=16,
         params={"barrier": ""}, default_args=RETRIES) as compaction:
    (barrier(None, "staged", task_id="wait_for_staged")
     >> PaimonCompactOperator(task_id="compact", table="db.vectors", full=True)
     >> barrier("compacted", None, task_id="mark_compacted"))


SOURCES = Path(__file__).resolve().parent.parent / "sources"  # the scheduler fixture's folder for sources
DAY = pendulum.datetime(2026, 1, 1, tz="UTC")


@task
def wait_for_source(path: str) -> None:
    """Until ``path`` exists (≤ 300 s): a landing-zone sensor."""
    deadline = time.monotonic() + 300
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not arrive within 300 s")
        time.sleep(0.5)


def waiting_write(dag_id: str, table: str, schedule, end, source: str) -> DAG:
    with DAG(dag_id, schedule=schedule, start_date=DAY, end_date=end, catchup=True, max_active_runs=2,
             params={"source": ""}, default_args=RETRIES) as dag:
        (wait_for_source(source)
         >> PaimonBootstrapIndexOperator(task_id="bootstrap_index", table=table, table_schema=SPEC, shards=2)
         >> PaimonAssignAndWriteOperator(task_id="assign_and_write", table=table, source=source,
                                         row_kind_column="op")
         >> PaimonCommitOperator(task_id="commit", table=table))
    return dag


DAILY_INTERVALS = CronDataIntervalTimetable("0 0 * * *", timezone="UTC")
interval_daily = waiting_write("interval_daily", "db.interval_daily", DAILY_INTERVALS, DAY,
                               "{{ params.source or '%s/interval_daily/' ~ ds ~ '.parquet' }}" % SOURCES)
hourly = waiting_write("hourly", "db.two_dags", CronTriggerTimetable("0 * * * *", timezone="UTC"), DAY.add(hours=2),
                       f"{SOURCES}/hourly/{{{{ ts_nodash }}}}.parquet")
# one day's data intervals by a timedelta (schedule=timedelta(days=1) with create_delta_data_intervals): the run for
# 2026-01-01 ends its interval at the next midnight
reconcile = waiting_write("reconcile", "db.two_dags", DeltaDataIntervalTimetable(datetime.timedelta(days=1)),
                          DAY.add(days=1),
                          f"{SOURCES}/reconcile/{{{{ ds }}}}.parquet")
asset_consumer = waiting_write("asset_consumer", "db.two_dags", [Asset("paimon-test://feed")], None,
                               f"{SOURCES}/asset_consumer/feed.parquet")
