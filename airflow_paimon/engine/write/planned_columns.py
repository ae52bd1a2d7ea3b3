"""The table columns a DAG run first planned its write against, kept in the run's staging directory.

A run that loses a race keeps its commit identity, so its staging directory: through a lost schema commit
(engine/table/schema_commit.py plans again in the same attempt) and through a lost snapshot commit (StaleIndexError:
bootstrap and assign-and-write again). A column the table gained after this record is one the run's source
never had — another writer's evolution, null for this run's rows — not a column the source dropped."""
from __future__ import annotations

import json

from airflow_paimon.engine.files import layout, storage


def recorded(run_staging: str) -> list[str] | None:
    uri = layout.planned_columns_file(run_staging)
    return json.loads(storage.read_bytes(uri))["columns"] if storage.exists(uri) else None


def record(run_staging: str, columns: list[str]) -> None:
    storage.write_bytes_atomic(layout.planned_columns_file(run_staging), json.dumps({"columns": columns}).encode())


def start_clean(run_staging: str) -> list[str] | None:
    """Empty the run's staging for a new attempt, keeping (and returning) the recorded columns."""
    columns = recorded(run_staging)
    storage.delete_dir(run_staging)
    if columns is not None:
        record(run_staging, columns)
    return columns
