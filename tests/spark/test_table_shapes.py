"""Every table shape through the Spark jobs: {fixed, dynamic, cross-partition} x merge engines x
{insert, update, move, delete}, read back with pypaimon, compared with a pandas-built oracle."""
from __future__ import annotations

import pandas as pd
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table import get_table
from airflow_paimon.spark.pipelines import in_driver
from spark.jobs import pipeline_on

pytestmark = pytest.mark.spark

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"], ["w", "STRING"]]
SHAPES = {"fixed": (["id", "dt"], {"bucket": "3"}),
          "dynamic": (["id", "dt"], {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}),
          "cross": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}),
          # a one-byte write buffer: every task spills its rows and takes its shards a chunk at a time
          "cross, spilled": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "2",
                                      "write-buffer-size": "1 b"}),
          # a small batch assigned and written by the driver itself (spark/pipelines/in_driver.py)
          "cross, in the driver": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "2"}),
          "cross, in the driver, spilled": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "2",
                                                     "write-buffer-size": "1 b"})}
ENGINES = {"deduplicate": {}, "partial-update": {}, "first-row": {},
           "aggregation": {"fields.v.aggregate-function": "sum"}}

B1 = [(1, "a", 1.0, "x", "+I"), (2, "a", 2.0, None, "+I"), (3, "b", 3.0, "z", "+I"), (4, "b", 4.0, "w", "+I")]
B2 = [(1, "a", 10.0, None, "+U"), (3, "c", 30.0, "zz", "+U"), (5, "a", 5.0, "v", "+I"), (5, "a", 6.0, None, "+I"),
      (4, "b", 4.0, "w", "-D")]
B3 = [(2, "a", 2.0, None, "-D"), (4, "b", 40.0, "back", "+I"), (1, "c", 100.0, "m", "+U"), (9, "z", 0.0, "u", "-D")]


def frame(rows, engine):
    rows = [r for r in rows if engine == "deduplicate" or r[4] not in ("-D", "-U")]
    return pd.DataFrame(rows, columns=["id", "dt", "v", "w", "op"])


def oracle(batches: list[pd.DataFrame], engine: str, key: list[str]) -> pd.DataFrame:
    """Paimon's documented result per merge engine; a cross-partition key (id alone) stays in its first
    partition except under deduplicate, where the newest row decides."""
    state: dict[tuple, dict] = {}
    for batch in batches:
        for row in batch.to_dict("records"):
            op, k = row.pop("op"), tuple(row[c] for c in key)
            row = {c: (None if pd.isna(v) else v) for c, v in row.items()}
            old = state.get(k)
            if engine == "deduplicate":
                state.pop(k, None) if op in ("-D", "-U") else state.__setitem__(k, row)
            elif engine == "first-row":
                state.setdefault(k, row)
            else:
                merged = {c: (row[c] if row[c] is not None else (old or {}).get(c)) for c in row}
                if old is not None:
                    merged["dt"] = old["dt"]
                    if engine == "aggregation":
                        merged["v"] = old["v"] + row["v"]
                state[k] = merged
    return pd.DataFrame(list(state.values()), columns=["id", "dt", "v", "w"]).sort_values(["id", "dt"]) \
        .reset_index(drop=True)


def read_back(table, engine: str, monkeypatch) -> pd.DataFrame:
    # Paimon reads first-row tables without level 0: the write's own compaction lifts it (as Paimon's writers do)
    rb = table.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pandas()
    return data[["id", "dt", "v", "w"]].sort_values(["id", "dt"]).reset_index(drop=True)


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_matrix(spark, warehouse, tmp_path, monkeypatch, shape, engine):
    key, options = SHAPES[shape]
    spec = {"columns": COLUMNS, "primary_keys": key, "partition_keys": ["dt"],
            "options": {**options, "merge-engine": engine, **ENGINES[engine]}}
    jobs = pipeline_on(spark, warehouse, "db.t", spec)
    if "in the driver" in shape:  # the session's tasks otherwise (tests/spark/conftest.py)
        monkeypatch.setattr(in_driver, "MAX_BYTES_DEFAULT", 2**20)
        spark.conf.unset(in_driver.MAX_BYTES_CONF)
    done, snapshot = [], None
    for i, rows in enumerate((B1, B2, B3)):
        batch = frame(rows, engine)
        boot, written, committed = jobs.upsert(batch, f"r{i}", tmp_path, row_kind_column="op")
        # a batch that writes nothing (first-row: only known keys) commits nothing; first-row's write is an APPEND
        # and the COMPACT lifting its level 0
        snapshot = (snapshot or 0) + (2 if engine == "first-row" else 1) if written["files"] else snapshot
        assert committed["snapshot_id"] == snapshot and not committed["already_committed"]
        assert boot["index_decision"] == ("not_needed" if key != ["id"] else ("rebuilt" if i == 0 else "reused"))
        done.append(batch)
        table = get_table(jobs.options, "db.t")
        actual = read_back(table, engine, monkeypatch)
        assert not actual.duplicated(key).any()
        pd.testing.assert_frame_equal(actual, oracle(done, engine, key), check_dtype=False)
    if key == ["id"] and engine == "deduplicate":
        assert written["moved_keys"] == 1  # key 1 moved a -> c in the last batch


@pytest.mark.parametrize("engine", ["first-row", "partial-update"])
def test_deletes_refused_up_front_where_paimon_refuses_them(spark, warehouse, tmp_path, engine):
    spec = {"columns": COLUMNS, "primary_keys": ["id", "dt"], "partition_keys": ["dt"],
            "options": {"bucket": "2", "merge-engine": engine}}
    jobs = pipeline_on(spark, warehouse, "db.t", spec)
    path = tmp_path / "d.parquet"
    pd.DataFrame(B2, columns=["id", "dt", "v", "w", "op"]).to_parquet(path, index=False)
    with pytest.raises(ValidationError, match=f"value '{engine}': merge-engine {engine} cannot take -U/-D rows"):
        jobs.assign_and_write(jobs.bootstrap(), {"path": str(path)}, "r", row_kind_column="op")


def test_unknown_operation_is_named(spark, warehouse, tmp_path):
    # (bucket -1: a fixed bucket on a key without the partition field is a shape Paimon itself refuses)
    jobs = pipeline_on(spark, warehouse, "db.t", {"columns": COLUMNS, "primary_keys": ["id"], "partition_keys": ["dt"],
                                           "options": {"bucket": "-1"}})
    path = tmp_path / "o.parquet"
    pd.DataFrame([(1, "a", 1.0, "x", "upsert")], columns=["id", "dt", "v", "w", "op"]).to_parquet(path, index=False)
    with pytest.raises(ValidationError, match="table db.t, column 'op', value 'upsert': row kind must be one of"):
        jobs.assign_and_write(jobs.bootstrap(), {"path": str(path)}, "r", row_kind_column="op")


@pytest.mark.parametrize("options", [{"bucket": "-1"}, {"bucket": "2", "bucket-key": "id"}])
def test_append_only_tables_append(spark, warehouse, tmp_path, options):
    spec = {"columns": COLUMNS, "primary_keys": [], "partition_keys": ["dt"], "options": options}
    jobs = pipeline_on(spark, warehouse, "db.log", spec)
    batches = [pd.DataFrame(B1, columns=["id", "dt", "v", "w", "op"]).drop(columns="op"),
               pd.DataFrame(B1[:2], columns=["id", "dt", "v", "w", "op"]).drop(columns="op")]
    for i, batch in enumerate(batches):
        boot, written, committed = jobs.upsert(batch, f"a{i}", tmp_path)
        assert boot["index_decision"] == "not_needed" and committed["snapshot_id"] == i + 1
        assert written["rows_written"] == len(batch)
    table = get_table(jobs.options, "db.log")
    rb = table.new_read_builder()
    actual = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pandas()
    expected = pd.concat(batches, ignore_index=True)
    key = ["id", "dt", "v"]
    pd.testing.assert_frame_equal(actual[expected.columns].sort_values(key).reset_index(drop=True),
                                  expected.sort_values(key).reset_index(drop=True), check_dtype=False)


@pytest.mark.parametrize("shape", ["fixed", "cross"])
def test_first_row_ignore_delete_fallback_key_drops_deletes(spark, warehouse, tmp_path, monkeypatch, shape):
    """``first-row.ignore-delete`` is a fallback key of Paimon's ``ignore-delete``: the -D rows pass the source
    check and are dropped, as Paimon's writer drops them and as this compaction does."""
    from local_runner import compact

    key, options = SHAPES[shape]
    spec = {"columns": COLUMNS, "primary_keys": key, "partition_keys": ["dt"],
            "options": {**options, "merge-engine": "first-row", "first-row.ignore-delete": "true"}}
    jobs = pipeline_on(spark, warehouse, "db.t", spec)
    for i, rows in enumerate((B1, B2, B3)):  # B2, B3 hold -D rows of known and unknown keys
        _, written, _ = jobs.upsert(pd.DataFrame(rows, columns=["id", "dt", "v", "w", "op"]), f"r{i}", tmp_path,
                                    row_kind_column="op")
        assert written["deletes"] == 0
    expected = oracle([frame(rows, "first-row") for rows in (B1, B2, B3)], "first-row", key)  # -D rows left out
    table = get_table(jobs.options, "db.t")
    pd.testing.assert_frame_equal(read_back(table, "first-row", monkeypatch), expected, check_dtype=False)
    compact(table, full=True, scope="table")  # level 0 moves up: a plain read sees the same rows
    actual = read_back(get_table(jobs.options, "db.t"), "deduplicate", monkeypatch)
    assert not actual.duplicated(key).any()
    pd.testing.assert_frame_equal(actual, expected, check_dtype=False)
