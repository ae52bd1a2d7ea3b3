"""What a commit of this provider records in its snapshot's ``properties`` (Paimon's snapshot field: string to
string), read back by the write (engine/commit/ordering.py) and the UI page. Imports nothing heavy: the UI's
plugin imports it."""
from __future__ import annotations

from dataclasses import asdict, dataclass

# The run's clock (engine/commit/ordering.py): the instant its data is as of (epoch ms), where that instant came
# from (AS_OF_SOURCES), and the rule its rows were ordered by (WRITE_ORDERS)
AS_OF, AS_OF_FROM, WRITE_ORDER = "airflow-paimon.as-of", "airflow-paimon.as-of-from", "airflow-paimon.write-order"
# whose run committed: the DAG, the run and Airflow's run type (scheduled, manual, backfill, asset_triggered)
DAG_ID, RUN_ID, RUN_TYPE = "airflow-paimon.dag-id", "airflow-paimon.run-id", "airflow-paimon.run-type"
LOGICAL_DATE = "airflow-paimon.logical-date"  # the run's logical date, epoch ms (none for a run without one)
# snapshot properties of how the commit got there, for the UI: the other writers' snapshots it went on top of
# (engine/commit/rebase.py), and how often the commit task wrote the run's batch again (operators/rewrite.py)
REBASED_OVER, REWRITES = "airflow-paimon.rebased-over", "airflow-paimon.rewrites"

# where a run's as-of instant comes from, the first the run has (operators/clock.py)
AS_OF_SOURCES = ("data_interval_end", "logical_date", "run_after")
# "as_of": a run leaves out the rows of keys runs of a later as-of instant wrote; "commit": Paimon's commit order
WRITE_ORDERS = ("as_of", "commit")


@dataclass(frozen=True, kw_only=True)
class RunClock:
    """The instant a DAG run's rows are ordered by among other runs' (engine/commit/ordering.py), and whose run it
    is. ``write_order`` "commit": the run takes no part in that order (Paimon's commit order)."""

    as_of_ms: int
    as_of_from: str  # one of AS_OF_SOURCES
    write_order: str = "as_of"  # one of WRITE_ORDERS
    dag_id: str | None = None
    run_id: str | None = None
    run_type: str | None = None
    logical_date_ms: int | None = None

    @property
    def ordered(self) -> bool:
        return self.write_order == "as_of"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> RunClock | None:
        return None if not data else cls(**data)

    def properties(self) -> dict[str, str]:
        found = {AS_OF: str(self.as_of_ms), AS_OF_FROM: self.as_of_from, WRITE_ORDER: self.write_order,
                 DAG_ID: self.dag_id, RUN_ID: self.run_id, RUN_TYPE: self.run_type,
                 LOGICAL_DATE: None if self.logical_date_ms is None else str(self.logical_date_ms)}
        return {k: v for k, v in found.items() if v is not None}

    @classmethod
    def of_snapshot(cls, snapshot) -> RunClock | None:
        """The clock ``snapshot``'s run committed with; None: not recorded (another engine's commit)."""
        return cls.of_properties(getattr(snapshot, "properties", None) or {})

    @classmethod
    def of_properties(cls, properties: dict) -> RunClock | None:
        """The clock recorded in a snapshot's ``properties``. A snapshot of an earlier version of this provider
        carries only its logical date: that was its as-of instant."""
        logical = _millis(properties.get(LOGICAL_DATE))
        as_of = _millis(properties.get(AS_OF))
        as_of = logical if as_of is None else as_of
        if as_of is None:
            return None
        return cls(as_of_ms=as_of,
                   as_of_from=properties.get(AS_OF_FROM, "logical_date"),
                   write_order=properties.get(WRITE_ORDER, "as_of"), dag_id=properties.get(DAG_ID),
                   run_id=properties.get(RUN_ID), run_type=properties.get(RUN_TYPE), logical_date_ms=logical)

    def same_kind_of_run(self, other: RunClock) -> bool:
        """Whether ``other`` is a run of the same DAG and run type as this one (a later day of its own schedule,
        not another DAG's run, a manual run or a backfill beside it)."""
        return (self.dag_id, self.run_type) == (other.dag_id, other.run_type)


def snapshot_properties(clock: RunClock | None, rewrites: int = 0) -> dict[str, str]:
    """The properties a run's snapshot carries (Paimon's snapshot ``properties``: string to string); the commit
    adds REBASED_OVER when it goes on top of other writers' snapshots."""
    properties = {} if clock is None else clock.properties()
    return {**properties, REWRITES: str(rewrites)} if rewrites else properties


def _millis(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
