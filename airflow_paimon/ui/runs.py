"""Which DAG run made a snapshot: the commit identity is a hash of (dag_id, run_id, table) and the run's
generation (its clear_number: each Clear of a finished run writes as a new generation), so it is recomputed for
the recent DAG runs, every generation up to their clear_number, and matched against the snapshots' commit users."""
from __future__ import annotations

from urllib.parse import quote

from airflow_paimon.engine.commit.identity import CommitIdentity

RECENT_RUNS = 5000  # ~10k sha256 per page view (more for cleared runs): well under a millisecond each


def recent_runs(limit: int = RECENT_RUNS) -> list[tuple[str, str, int]]:
    """(dag_id, run_id, clear_number) of the latest ``limit`` DAG runs."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return [(dag_id, run_id, int(clears or 0)) for dag_id, run_id, clears in session.execute(
            select(DagRun.dag_id, DagRun.run_id, DagRun.clear_number).order_by(DagRun.id.desc()).limit(limit))]


def runs_by_commit_user(identifier: str, runs: list[tuple]) -> dict[str, tuple[str, str, int]]:
    """commit user -> (dag_id, run_id, generation), for the write and the compaction each generation of a run
    (0 up to its clear_number; a run given as (dag_id, run_id) was never cleared) may have committed."""
    from airflow_paimon.engine.runs.compact import compaction_identity  # the job side's (ui/tables.py's caller)

    found = {}
    for dag_id, run_id, *clears in runs:
        for generation in range(int(clears[0] or 0) + 1 if clears else 1):
            made_by = (dag_id, run_id, generation)
            found[CommitIdentity.for_run(dag_id, run_id, identifier, generation).commit_user] = made_by
            found[compaction_identity(dag_id, run_id, identifier, generation).commit_user] = made_by
    return found


def run_label(dag_run: tuple) -> str:
    """``dag / run``, and ``(clear N)`` for what a run wrote when cleared the Nth time (a reprocess)."""
    dag_id, run_id, *generation = dag_run
    return f"{dag_id} / {run_id}" + (f" (clear {generation[0]})" if generation and generation[0] else "")


def dag_run_url(dag_id: str, run_id: str) -> str:
    """The DAG run's page in the Airflow 3 UI."""
    return f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
