"""Java Paimon 1.0 reads every table shape the engine writes as pypaimon and a pandas oracle do: merge engine ×
changelog producer × deletion vectors × bucket shape, three upserts (updates, deletes where the engine takes them,
key moves) and a full compaction, Java's read and (with a producer) its changelog read checked after every
commit. The combinations Paimon's SchemaValidation refuses are refused before anything is written."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from changelog_tables import changelog_of
from java_paimon import assert_java_reads_as_pypaimon, java_read, missing
from local_runner import bootstrap, compact, upsert
from oracle import assert_table_equals

pytestmark = [pytest.mark.java, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"], ["m", "DOUBLE"], ["l", "DOUBLE"]]
VALUES = ["v", "m", "l"]
SHAPES = {"fixed": (["dt", "id"], {"bucket": "2"}),
          "dynamic": (["dt", "id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}),
          "cross-partition": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3"})}
ENGINES = {"deduplicate": {},
           "partial-update": {},
           "aggregation": {"fields.v.aggregate-function": "sum", "fields.m.aggregate-function": "max",
                           "fields.l.aggregate-function": "last_non_null_value"},
           "first-row": {}}
DELETES = {"deduplicate"}  # first-row takes none; max cannot retract; pypaimon reads no remove-record-on-delete
PRODUCERS = ["none", "input", "lookup", "full-compaction"]
# Paimon's SchemaValidation: (engine, producer, deletion vectors) it refuses, and its reason (ours, in part)
REFUSED = {("first-row", "input"): "first-row takes only 'none' or 'lookup'",
           ("first-row", "full-compaction"): "first-row takes only 'none' or 'lookup'",
           ("first-row", "dv"): "cannot be used with merge-engine first-row",
           ("dv", "full-compaction"): "cannot be used with deletion vectors"}

# (id, dt, v, m, l, -D?) per run: updates in place, nulls the merging engines skip, a duplicate in a batch, deletes,
# and keys written again in the other partition (a move on a cross-partition table, a new key on the others)
N = None
RUNS = [[(1, "a", 1, 1, 1, 0), (2, "a", 2, 2, N, 0), (3, "b", 3, 3, 3, 0), (4, "b", 4, 4, 4, 0),
         (5, "a", 5, N, 5, 0), (6, "b", 6, 6, 6, 0)],
        [(1, "a", 10, 0, N, 0), (2, "a", N, 7, 2, 0), (3, "b", 1, 1, 1, 1), (7, "a", 7, 7, 7, 0),
         (7, "a", 1, 9, N, 0), (4, "a", 2, 5, 8, 0)],
        [(1, "b", 3, 4, 4, 0), (2, "a", 1, N, N, 1), (3, "b", 9, 9, 9, 0), (5, "a", N, 8, N, 0),
         (8, "b", 8, 8, 8, 0), (6, "a", 6, 1, 6, 0)]]


def _cells():
    for shape in SHAPES:
        for engine in ENGINES:
            for producer in PRODUCERS:
                for dv in (False, True):
                    if _refusal(engine, producer, dv) is None:
                        yield pytest.param(shape, engine, producer, dv,
                                           id=f"{shape}-{engine}-{producer}{'-dv' if dv else ''}")


def _refusal(engine: str, producer: str, dv: bool) -> str | None:
    return (REFUSED.get((engine, producer)) or (REFUSED.get((engine, "dv")) if dv else None)
            or (REFUSED.get(("dv", producer)) if dv else None))


def _spec(shape: str, engine: str, producer: str, dv: bool) -> TableSpec:
    keys, options = SHAPES[shape]
    return TableSpec.from_dict({"columns": COLUMNS, "primary_keys": keys, "partition_keys": ["dt"],
                                "options": {**options, **ENGINES[engine], "merge-engine": engine,
                                            "changelog-producer": producer,
                                            **({"deletion-vectors.enabled": "true"} if dv else {})}})


def _batch(run: list[tuple], engine: str) -> tuple[pd.DataFrame, np.ndarray]:
    rows = [r for r in run if engine in DELETES or not r[5]]
    frame = pd.DataFrame([r[:5] for r in rows], columns=[c for c, _ in COLUMNS]).astype({c: float for c in VALUES})
    return frame, np.array([3 if r[5] else 0 for r in rows], np.int8)  # 3: -D


def _oracle(state: dict, run: list[tuple], engine: str, cross: bool) -> None:
    """Apply one run to ``state`` (key -> row) row by row, as Paimon's merge engines and, on a cross-partition
    table, its ExistingProcessor do: deduplicate moves the key, the other engines keep its old partition."""
    for id_, dt, *values, delete in run:
        key = id_ if cross else (dt, id_)
        old = state.get(key)
        if delete:
            if engine in DELETES:
                state.pop(key, None)
        elif old is None or engine == "deduplicate":
            state[key] = {"id": id_, "dt": dt, **dict(zip(VALUES, values))}
        elif engine == "partial-update":
            state[key] = {**old, **{c: x for c, x in zip(VALUES, values) if x is not None}}
        elif engine == "aggregation":
            (v, m, last), (nv, nm, nl) = (old[c] for c in VALUES), values
            state[key] = {**old, "v": v if nv is None else nv if v is None else v + nv,
                          "m": m if nm is None else nm if m is None else max(m, nm), "l": last if nl is None else nl}


def _expected(state: dict) -> pd.DataFrame:
    frame = pd.DataFrame(list(state.values()), columns=[c for c, _ in COLUMNS]).astype({c: float for c in VALUES})
    return frame.sort_values(["dt", "id"]).reset_index(drop=True)


def _changelog_agrees(warehouse: str, table, start: int, end: int, engine: str) -> int:
    """Java's changelog read of snapshots (start, end] equals ours, row kinds included; the number of rows.
    Java's batch read merges a bucket's changelog records of one key with the merge engine (an aggregation's input
    changelog holds each record of a batch); ours returns each, as Java's streaming read does: merged here alike."""
    ours = changelog_of(table, start, end)
    if ours.duplicated(["dt", "id", "row_kind"]).any():
        assert set(ours.row_kind) == {"+I"}, ours
        state: dict = {}
        rows = ours.astype(object).where(ours.notna(), None)
        _oracle(state, [(r.id, r.dt, r.v, r.m, r.l, 0) for r in rows.itertuples()], engine, cross=False)
        ours = _expected(state).assign(row_kind="+I")
    java = java_read(warehouse, "db.t", incremental=(start, end, "changelog"))
    order = ["dt", "id", "row_kind", *VALUES]
    if java.empty or ours.empty:
        assert java.empty and ours.empty, (java, ours)
        return 0
    java = java.rename(columns={"_row_kind": "row_kind"})[order].sort_values(order).reset_index(drop=True)
    pd.testing.assert_frame_equal(java, ours[order].sort_values(order).reset_index(drop=True), check_dtype=False)
    return len(ours)


@pytest.mark.parametrize("shape,engine,producer,dv", list(_cells()))
def test_java_reads_as_we_write(warehouse, shape, engine, producer, dv):
    spec, opts = _spec(shape, engine, producer, dv), {"warehouse": warehouse}
    keys, cross = ["dt", "id"], shape == "cross-partition"
    get_or_create_table(opts, "db.t", spec)
    state: dict = {}
    last, changes = 0, 0
    for i, run in enumerate(RUNS):
        frame, kinds = _batch(run, engine)
        sid, _ = upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
                        pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}",
                        row_kinds=kinds)
        _oracle(state, run, engine, cross)
        table = get_table(opts, "db.t")
        assert_table_equals(table, _expected(state), keys)
        assert_java_reads_as_pypaimon(warehouse, "db.t", keys)
        if producer != "none":
            changes += _changelog_agrees(warehouse, table, last, sid, engine)
        last = sid
    done = compact(get_table(opts, "db.t"), run_id="full", full=True, scope="table")
    table = get_table(opts, "db.t")
    assert_table_equals(table, _expected(state), keys)
    assert_java_reads_as_pypaimon(warehouse, "db.t", keys)
    if producer != "none":
        changes += _changelog_agrees(warehouse, table, last, done["snapshot_id"] or last, engine)
        assert changes > 0


@pytest.mark.parametrize("engine,producer,dv", [("first-row", "input", False), ("first-row", "full-compaction", False),
                                                ("first-row", "none", True), ("first-row", "lookup", True),
                                                ("deduplicate", "full-compaction", True),
                                                ("aggregation", "full-compaction", True)])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_what_paimon_refuses_is_refused_before_anything_is_written(warehouse, shape, engine, producer, dv):
    with pytest.raises(ValidationError, match=_refusal(engine, producer, dv)):
        get_or_create_table({"warehouse": warehouse}, "db.t", _spec(shape, engine, producer, dv))
    assert not os.path.exists(os.path.join(warehouse, "db.db", "t"))
