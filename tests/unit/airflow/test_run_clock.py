"""The clock each kind of DAG run writes by (operators/clock.py), with the data intervals Airflow's own timetables
give: scheduled and backfill runs of trigger and data-interval timetables, manual runs with a logical date (the
interval the REST API infers) and without one, asset-triggered runs. The runs are Airflow's own runtime model of
a DAG run (what a task's context holds); docs/backfills-and-reruns.md has the same table."""
from __future__ import annotations

import pendulum
import pytest
from airflow.sdk.api.datamodels._generated import DagRun, DagRunState, DagRunType
from airflow.timetables.base import TimeRestriction
from airflow.timetables.interval import CronDataIntervalTimetable, DeltaDataIntervalTimetable
from airflow.timetables.trigger import CronTriggerTimetable

from airflow_paimon.engine.commit.properties import RunClock
from airflow_paimon.operators.clock import run_clock

DAY = pendulum.datetime(2026, 1, 1, tz="UTC")
HOURLY = CronTriggerTimetable("0 * * * *", timezone="UTC")  # Airflow 3's timetable for schedule="@hourly"
DAILY_INTERVALS = CronDataIntervalTimetable("0 0 * * *", timezone="UTC")  # "@daily", create_cron_data_intervals
SIX_HOURS = DeltaDataIntervalTimetable(pendulum.duration(hours=6))


def dag_run(run_type: DagRunType, run_after, logical_date=None, interval=None, dag_id: str = "d") -> DagRun:
    return DagRun(dag_id=dag_id, run_id=f"{run_type.value}__{run_after.isoformat()}", logical_date=logical_date,
                  data_interval_start=interval.start if interval else None,
                  data_interval_end=interval.end if interval else None, run_after=run_after, start_date=None,
                  end_date=None, run_type=run_type, state=DagRunState.RUNNING, consumed_asset_events=[],
                  partition_key=None)


def scheduled(timetable, earliest, run_type: DagRunType = DagRunType.SCHEDULED, dag_id: str = "d") -> DagRun:
    """The run the scheduler (or a backfill, the same interval) makes for the first slot at ``earliest``."""
    info = timetable.next_dagrun_info(last_automated_data_interval=None,
                                      restriction=TimeRestriction(earliest=earliest, latest=None, catchup=True))
    return dag_run(run_type, info.run_after, info.logical_date, info.data_interval, dag_id)


def manual(timetable, logical_date=None, run_after=None) -> DagRun:
    """A manual run as the REST API makes it: with a logical date, the interval the timetable infers for it."""
    if logical_date is None:
        return dag_run(DagRunType.MANUAL, run_after)
    return dag_run(DagRunType.MANUAL, run_after or logical_date, logical_date,
                   timetable.infer_manual_data_interval(run_after=logical_date))


def clock(run: DagRun) -> RunClock:
    return RunClock.from_dict(run_clock({"dag_run": run}))


@pytest.mark.parametrize(("run", "as_of", "source"), [
    # a trigger timetable's run is as of its logical date (an interval of no length)
    (scheduled(HOURLY, DAY.add(hours=9)), DAY.add(hours=9), "data_interval_end"),
    # a data-interval timetable's run is as of the end of its interval, when it may run: not its logical date
    (scheduled(DAILY_INTERVALS, DAY), DAY.add(days=1), "data_interval_end"),
    (scheduled(SIX_HOURS, DAY), DAY.add(hours=6), "data_interval_end"),
    (scheduled(DAILY_INTERVALS, DAY, DagRunType.BACKFILL), DAY.add(days=1), "data_interval_end"),
    # manual with a logical date: the last whole interval before it; manual without one, asset-triggered: when queued
    (manual(DAILY_INTERVALS, DAY.add(hours=15)), DAY, "data_interval_end"),
    (manual(HOURLY, DAY.add(hours=15)), DAY.add(hours=15), "data_interval_end"),
    (manual(DAILY_INTERVALS, run_after=DAY.add(hours=15)), DAY.add(hours=15), "run_after"),
    (dag_run(DagRunType.ASSET_TRIGGERED, DAY.add(hours=10)), DAY.add(hours=10), "run_after"),
], ids=["trigger", "data-interval", "delta", "backfill", "manual-dated", "manual-dated-trigger", "manual",
        "asset-triggered"])
def test_each_kind_of_run_is_as_of_the_instant_its_data_is(run, as_of, source):
    got = clock(run)
    assert (got.as_of_ms, got.as_of_from) == (int(as_of.timestamp() * 1000), source)
    assert (got.dag_id, got.run_id, got.run_type, got.write_order) == (run.dag_id, run.run_id, run.run_type.value,
                                                                       "as_of")
    assert got.logical_date_ms == (None if run.logical_date is None else int(run.logical_date.timestamp() * 1000))


def test_a_manual_run_then_the_scheduled_run_of_its_day_the_scheduled_run_is_newer():
    """Case A: a run triggered without a logical date at 15:00 holds data as of 15:00; the data-interval run for
    that day runs at midnight after it with the whole day: newer, though its logical date (00:00) is earlier."""
    assert clock(scheduled(DAILY_INTERVALS, DAY)).as_of_ms > clock(manual(DAILY_INTERVALS,
                                                                          run_after=DAY.add(hours=15))).as_of_ms


def test_an_hourly_dag_and_a_daily_reconciliation_dag_the_reconciliation_is_newer():
    """Case B: every hourly run of a day is as of its hour; the day's reconciliation (a data-interval timetable) is
    as of the day's end: newer than all of them, though its logical date is the day's first hour."""
    reconciliation = clock(scheduled(DAILY_INTERVALS, DAY, dag_id="reconcile"))
    hours = [clock(scheduled(HOURLY, DAY.add(hours=h), dag_id="hourly")) for h in range(24)]
    assert all(h.as_of_ms < reconciliation.as_of_ms for h in hours)
    assert not any(h.same_kind_of_run(reconciliation) for h in hours)  # another DAG: yielding to it warns


def test_write_order_is_checked_when_the_dag_is_parsed():
    from airflow_paimon.operators.paimon import PaimonAssignAndWriteOperator

    with pytest.raises(ValueError, match="write_order"):
        PaimonAssignAndWriteOperator(task_id="w", table="db.t", source="/x.parquet", write_order="logical_date")
    assert run_clock({"dag_run": scheduled(HOURLY, DAY)}, "commit")["write_order"] == "commit"
