"""What a commit of this provider records in its snapshot's ``properties`` (Paimon's snapshot field: string to
string), read back by the write (engine/commit/ordering.py) and the UI page. Imports nothing heavy: the UI's
plugin imports it."""
from __future__ import annotations

LOGICAL_DATE = "airflow-paimon.logical-date"  # snapshot property: the committing DAG run's logical date, epoch ms
# snapshot properties of how the commit got there, for the UI: the other writers' snapshots it went on top of
# (engine/commit/rebase.py), and how often the commit task wrote the run's batch again (operators/rewrite.py)
REBASED_OVER, REWRITES = "airflow-paimon.rebased-over", "airflow-paimon.rewrites"


def snapshot_properties(logical_date_ms: int | None, rewrites: int = 0) -> dict[str, str]:
    """The properties a run's snapshot carries (Paimon's snapshot ``properties``: string to string); the commit
    adds REBASED_OVER when it goes on top of other writers' snapshots."""
    properties = {} if logical_date_ms is None else {LOGICAL_DATE: str(int(logical_date_ms))}
    return {**properties, REWRITES: str(rewrites)} if rewrites else properties


def logical_date_of(snapshot) -> int | None:
    """The logical date (epoch ms) of the DAG run that committed ``snapshot``; None: not recorded."""
    value = (getattr(snapshot, "properties", None) or {}).get(LOGICAL_DATE)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
