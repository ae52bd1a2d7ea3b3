"""Which DAG run made a snapshot: the commit identity is a hash of (dag_id, run_id, table), so it is
recomputed for the recent DAG runs and matched against the snapshots' commit users."""
from __future__ import annotations

from urllib.parse import quote

from airflow_paimon.engine.commit.identity import CommitIdentity

RECENT_RUNS = 5000  # ~10k sha256 per page view: well under a millisecond each


def recent_runs(limit: int = RECENT_RUNS) -> list[tuple[str, str]]:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return [tuple(r) for r in session.execute(
            select(DagRun.dag_id, DagRun.run_id).order_by(DagRun.id.desc()).limit(limit))]


def runs_by_commit_user(identifier: str, runs: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """commit user -> (dag_id, run_id), for the write and the compaction each run may have committed."""
    from airflow_paimon.engine.compact.run import compaction_identity  # the job side's (ui/tables.py's caller)

    found = {}
    for dag_id, run_id in runs:
        found[CommitIdentity.for_run(dag_id, run_id, identifier).commit_user] = (dag_id, run_id)
        found[compaction_identity(dag_id, run_id, identifier).commit_user] = (dag_id, run_id)
    return found


def dag_run_url(dag_id: str, run_id: str) -> str:
    """The DAG run's page in the Airflow 3 UI."""
    return f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
