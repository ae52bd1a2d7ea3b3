"""Tables with ``changelog-producer=input`` written by the engine in-process, and their changelog read back
(tests/unit/write/test_changelog_input.py, tests/java)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from airflow_paimon.engine.read.changelog_read import changelog_rows, plan_changelog
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, upsert

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
CROSS = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                             "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "30",
                                         "changelog-producer": "input"}})
FIXED = TableSpec.from_dict({**CROSS.to_dict(), "primary_keys": ["dt", "id"],
                             "options": {"bucket": "3", "changelog-producer": "input"}})
DYNAMIC = TableSpec.from_dict({**CROSS.to_dict(), "primary_keys": ["dt", "id"],
                               "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "30",
                                           "changelog-producer": "input"}})
SPECS = {"cross-partition": CROSS, "fixed-bucket": FIXED, "dynamic-bucket": DYNAMIC}
KINDS = np.array(["+I", "-U", "+U", "-D"], dtype=object)


def soak(seed: int, n_batches: int = 4):
    """Batches of inserts, updates, moves (cross-partition), deletes and in-batch duplicates; (frame, kinds)."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(n_batches):
        n = 120
        ids = rng.integers(0, 200, n)  # in-batch duplicates on purpose
        frame = pd.DataFrame({"id": ids, "dt": rng.choice(["a", "b", "c"], n), "v": rng.random(n).round(3)})
        kinds = np.where(rng.random(n) < (0.15 if b else 0), 3, 0).astype(np.int8)  # -D after the first batch
        out.append((frame, kinds))
    return out


def with_options(spec: TableSpec, options: dict) -> TableSpec:
    """``spec`` with ``options`` set over its own."""
    return TableSpec.from_dict({**spec.to_dict(), "options": {**spec.to_dict()["options"], **options}})


def write_all(warehouse: str, spec: TableSpec, batches) -> list[int]:
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    snapshots = []
    for i, (frame, kinds) in enumerate(batches):
        ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
        sid, _ = upsert(ctx, pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False),
                        f"r{i}", row_kinds=kinds)
        snapshots.append(sid)
    return snapshots


def changelog_of(table, start: int, end: int) -> pd.DataFrame:
    parts = [changelog_rows(table, work, "row_kind") for work in plan_changelog(table, start, end)]
    return pa.concat_tables(parts).to_pandas() if parts else pd.DataFrame(columns=["id", "dt", "v", "row_kind"])


def replay(state: pd.DataFrame, changelog: pd.DataFrame) -> pd.DataFrame:
    """Apply changelog rows in order, each partition's rows by (dt, id): -U/-D remove, +I/+U upsert."""
    rows = {(r.dt, r.id): r.v for r in state.itertuples()}
    for r in changelog.itertuples():
        if r.row_kind in ("-D", "-U"):
            rows.pop((r.dt, r.id), None)
        else:
            rows[(r.dt, r.id)] = r.v
    return pd.DataFrame([{"id": i, "dt": d, "v": v} for (d, i), v in rows.items()], columns=["id", "dt", "v"])


FULL = {"changelog-producer": "full-compaction"}


def write_and_compact(warehouse: str, spec: TableSpec, batches, every: int = 1) -> list[int]:
    """Write each batch, fully compact every ``every`` batches; the COMPACT snapshot of each full compaction."""
    from local_runner import compact

    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    compactions = []
    for i, (frame, kinds) in enumerate(batches):
        ctx = bootstrap(opts, "db.t", warehouse + "/.index", 2)
        upsert(ctx, pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}",
               row_kinds=kinds)
        if (i + 1) % every == 0:
            done = compact(get_table(opts, "db.t"), run_id=f"c{i}", full=True, scope="table")
            compactions.append(done["snapshot_id"])
    return compactions
