"""The clock a DAG run writes by: the instant its data is *as of*, taken from what Airflow gives the run, the first it
has of

1. the end of its data interval — a scheduled or backfill run of a data-interval timetable
   (``CronDataIntervalTimetable``, ``DeltaDataIntervalTimetable``) ends its interval when it may run: the data is
   as of then, not as of its logical date (the interval's start); a trigger timetable's run (``CronTriggerTimetable``,
   Airflow 3's default for a cron ``schedule``) has an interval of no length at its logical date; a manual run with
   a logical date has the interval the timetable infers for that date;
2. its logical date;
3. its ``run_after`` — a manual run triggered without a logical date, an asset-triggered run: when it was queued.

engine/commit/ordering.py orders runs' rows by it; docs/backfills-and-reruns.md has the table."""
from __future__ import annotations

from airflow_paimon.engine.commit.properties import RunClock


def run_clock(context, write_order: str = "as_of") -> dict | None:
    """The DAG run's clock (RunClock as a dict, for the job spec); None for a run with no instant at all."""
    run = context["dag_run"]
    logical = getattr(run, "logical_date", None)
    found = [(source, when) for source, when in (("data_interval_end", getattr(run, "data_interval_end", None)),
                                                  ("logical_date", logical),
                                                  ("run_after", getattr(run, "run_after", None)))
             if when is not None]
    if not found:
        return None
    source, when = found[0]
    run_type = getattr(run, "run_type", None)
    return RunClock(as_of_ms=_millis(when), as_of_from=source, write_order=write_order, dag_id=run.dag_id,
                    run_id=run.run_id, run_type=getattr(run_type, "value", run_type),
                    logical_date_ms=None if logical is None else _millis(logical)).to_dict()


def _millis(when) -> int:
    return int(when.timestamp() * 1000)
