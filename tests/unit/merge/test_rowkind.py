"""Operation column and in-batch merging against a pandas oracle of Paimon's merge functions."""
import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.merge.rowkind import occurrence_rounds, resolve_duplicates, row_kinds
from airflow_paimon.engine.codec.kinds import DELETE, INSERT, ROW_KINDS
from airflow_paimon.engine.merge.merge_engine import MergeRules

FIRST_ROW = MergeRules.of({"merge-engine": "first-row"})
rng = np.random.default_rng(7)


def test_operation_column_to_row_kind_bytes():
    assert row_kinds(pa.array(["+I", "-U", "+U", "-D", "+I"])).tolist() == [0, 1, 2, 3, 0]
    assert row_kinds(pa.chunked_array([["+U"], ["-D"]]).cast(pa.large_string())).tolist() == [2, 3]
    with pytest.raises(ValidationError, match=r"table db.t, column 'op', value 'U'"):
        row_kinds(pa.array(["+I", "U"]), identifier="db.t", column="op")
    with pytest.raises(ValidationError, match="value None"):
        row_kinds(pa.array(["+I", None]), identifier="db.t")


def test_row_kind_text_only_in_the_codec():
    """The row kinds as text ("+I", "-U", "+U", "-D") are spelled in engine/codec/kinds.py alone; code elsewhere
    imports them from there (prose in docstrings and messages aside)."""
    root = Path(__file__).resolve().parents[3]
    stray = [f"{path.relative_to(root)}:{node.lineno} {node.value!r}"
             for path in sorted((root / "airflow_paimon").rglob("*.py")) if path.name != "kinds.py"
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ROW_KINDS]
    assert not stray, f"row kinds spelled outside airflow_paimon/engine/codec/kinds.py: {stray}"


def _batch(n=3000, keys=400, with_seq=True, null_share=0.3):
    df = pd.DataFrame({"k1": rng.integers(0, keys // 20, n), "k2": rng.choice(list("abcdefghijklmnopqrst"), n),
                       "seq": rng.integers(0, 5, n).astype(float), "a": rng.normal(size=n),
                       "b": rng.integers(0, 100, n).astype(float)})
    for c in ("a", "b"):
        df.loc[rng.random(n) < null_share, c] = np.nan
    if with_seq:
        df.loc[rng.random(n) < 0.05, "seq"] = np.nan  # null sequence values sort first
    return df


def _arrow(df):
    return pa.Table.from_pandas(df, preserve_index=False)


def _oracle_order(df, seq, ascending=True):
    d = df.assign(_in=np.arange(len(df)))
    if seq:
        key = (d[seq] if ascending else -d[seq]).fillna(-np.inf)  # nulls first in either direction (Java)
        d = d.assign(_s=key).sort_values(["_s", "_in"], kind="stable")
    return d


@pytest.mark.parametrize("seq,ascending", [(None, True), ("seq", True), ("seq", False)])
def test_deduplicate_keeps_the_last_record_in_sequence_order(seq, ascending):
    df = _batch()
    kinds = np.where(rng.random(len(df)) < 0.2, DELETE, INSERT).astype(np.int8)
    opts = {"sequence.field": seq, "sequence.field.sort-order": "ascending" if ascending else "descending"} \
        if seq else {}
    got = resolve_duplicates(_arrow(df), kinds, ["k1", "k2"], MergeRules.of(opts))
    ordered = _oracle_order(df.assign(kind=kinds), seq, ascending)
    expected = ordered.groupby(["k1", "k2"], sort=False).tail(1).sort_values("_in")
    assert got.rows.to_pandas()[["k1", "k2", "a", "b"]].equals(expected[["k1", "k2", "a", "b"]].reset_index(drop=True))
    assert got.row_kinds.tolist() == expected["kind"].tolist()
    assert got.dropped == len(df) - len(expected)


def test_deduplicate_ignore_delete_drops_retractions_first():
    df = pd.DataFrame({"k": [1, 1, 2, 2], "v": [1.0, 2.0, 3.0, 4.0]})
    got = resolve_duplicates(_arrow(df), np.array([0, 3, 0, 1], np.int8), ["k"],
                             MergeRules.of({"ignore-delete": "true"}))
    assert got.rows.to_pydict() == {"k": [1, 2], "v": [1.0, 3.0]} and got.row_kinds.tolist() == [0, 0]


def test_first_row_keeps_the_first_and_refuses_retractions():
    df = _batch(with_seq=False)
    got = resolve_duplicates(_arrow(df), np.zeros(len(df), np.int8), ["k1", "k2"], FIRST_ROW)
    expected = df.drop_duplicates(["k1", "k2"], keep="first")
    assert got.rows.to_pandas().equals(expected.reset_index(drop=True))
    with pytest.raises(ValidationError, match="first-row cannot accept -U/-D"):
        resolve_duplicates(_arrow(df), np.full(len(df), DELETE, np.int8), ["k1", "k2"], FIRST_ROW,
                           identifier="db.t")


@pytest.mark.parametrize("seq", [None, "seq"])
def test_partial_update_takes_each_columns_last_non_null_value(seq):
    df = _batch()
    options = {"merge-engine": "partial-update", **({"sequence.field": seq} if seq else {})}
    got = resolve_duplicates(_arrow(df), np.zeros(len(df), np.int8), ["k1", "k2"], MergeRules.of(options))
    ordered = _oracle_order(df, seq)
    grouped = ordered.groupby(["k1", "k2"], sort=False)
    expected = grouped[["seq", "a", "b"]].last()  # pandas' last() skips nulls: partial-update
    expected["_in"] = grouped["_in"].last()
    expected = expected.reset_index().sort_values("_in")[list(df.columns)].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.rows.to_pandas(), expected)
    assert (got.row_kinds == INSERT).all()


def test_partial_update_remove_record_on_delete():
    df = pd.DataFrame({"k": [1, 1, 1, 2, 2, 3, 3], "a": [1.0, None, None, 5.0, None, 7.0, None],
                       "b": [None, 2.0, 9.0, None, 6.0, None, 8.0]})
    kinds = np.array([0, 0, 3, 0, 3, 3, 2], np.int8)  # key 1 deleted last; 2 deleted; 3 reset then updated
    with pytest.raises(ValidationError, match="partial-update cannot accept"):
        resolve_duplicates(_arrow(df), kinds, ["k"], MergeRules.of({"merge-engine": "partial-update"}))
    got = resolve_duplicates(_arrow(df), kinds, ["k"], MergeRules.of(
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}))
    assert got.row_kinds.tolist() == [DELETE, DELETE, INSERT]
    assert got.rows.to_pydict()["b"][2] == 8.0 and got.rows.to_pydict()["a"][2] is None


def test_occurrence_rounds_give_each_keys_records_their_merge_rank():
    df = pd.DataFrame({"k": [5, 1, 5, 5, 1], "seq": [3, 0, 1, 2, 0]})
    assert occurrence_rounds(_arrow(df), ["k"]).tolist() == [0, 0, 1, 2, 1]
    assert occurrence_rounds(_arrow(df), ["k"], ["seq"]).tolist() == [2, 0, 0, 1, 1]


def test_aggregation_is_left_to_paimons_merge():
    with pytest.raises(NotImplementedError, match="occurrence_rounds"):
        resolve_duplicates(_arrow(pd.DataFrame({"k": [1]})), np.zeros(1, np.int8), ["k"],
                           MergeRules.of({"merge-engine": "aggregation"}))


def test_a_batch_of_unique_encoded_keys_skips_the_merge_and_matches_it():
    """keys_unique() lets a batch whose encoded keys never repeat skip merge_order's sort; what it returns must
    be what the merge returns, and a single repeated key (or keys it cannot judge) must take the merge."""
    from airflow_paimon.engine.codec.keys import encode_keys
    from airflow_paimon.engine.merge import rowkind

    ids = rng.permutation(10_000)[:2_000]
    rows = pa.table({"id": ids, "v": rng.normal(size=len(ids))})
    rows = rows.append_column("_key", encode_keys(rows, ["id"]))
    kinds = np.zeros(rows.num_rows, dtype=np.int8)
    assert rowkind.keys_unique(rows, ["_key"])
    assert not rowkind.keys_unique(rows, ["id"])  # not an encoded key: left to the merge
    fast = resolve_duplicates(rows, kinds, ["_key"], FIRST_ROW)
    merged_order = rowkind.merge_order(rows, ["_key"])
    assert fast.rows.equals(rows) and fast.dropped == 0
    assert sorted(merged_order.tolist()) == list(range(rows.num_rows))
    assert occurrence_rounds(rows, ["_key"]).tolist() == [0] * rows.num_rows

    twice = pa.concat_tables([rows, rows.slice(5, 1)])
    assert not rowkind.keys_unique(twice, ["_key"])
    resolved = resolve_duplicates(twice, np.zeros(twice.num_rows, dtype=np.int8), ["_key"])
    assert resolved.rows.num_rows == rows.num_rows and resolved.dropped == 1
    assert occurrence_rounds(twice, ["_key"]).tolist()[-1] == 1
