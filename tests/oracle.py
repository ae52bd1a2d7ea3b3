"""The expected table, computed independently of the engine with pandas, and table read-back helpers."""
from __future__ import annotations

import pandas as pd


RETRACT = ("-D", "-U")  # row kinds that remove the key (Paimon's RowKind: DELETE, UPDATE_BEFORE)


def expected_upsert(batches: list[pd.DataFrame], key: str, start: pd.DataFrame | None = None,
                    row_kind: str | None = None) -> pd.DataFrame:
    """Deduplicate merge engine: for each key the last row of the last batch that has it (in-batch duplicates
    included), wherever it lives. With ``row_kind`` (a column of +I/+U/-U/-D), a key whose last row is a
    retraction is gone, and the column itself is not part of the table."""
    frames = ([start] if start is not None else []) + list(batches)
    allrows = pd.concat(frames, ignore_index=True)
    last = allrows.drop_duplicates(subset=[key], keep="last")
    if row_kind is not None:
        last = last[~last[row_kind].isin(RETRACT)].drop(columns=[row_kind])
    return last.sort_values(key).reset_index(drop=True)


def expected_overwrite(before: pd.DataFrame, batch: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """Partitions of the batch replaced by the batch (last row per key wins); elsewhere the rows stay, minus
    keys the batch now holds (a key lives once in the table)."""
    batch = batch.drop_duplicates(subset=key, keep="last")
    kept = before[~before.dt.isin(batch.dt.unique())]
    kept = kept[~kept.set_index(key).index.isin(batch.set_index(key).index)]
    return pd.concat([kept, batch], ignore_index=True).sort_values(key).reset_index(drop=True)


def in_commit_order(table, runs: dict, dag_id: str = "test") -> list:
    """``runs`` (run id -> what the test wrote in it) in the order their commits made the table's snapshots:
    the order the oracle applies them in. Snapshots of other commits (compactions) are left out."""
    from airflow_paimon.engine.commit.identity import CommitIdentity

    identifier = table.identifier.get_full_name()
    by_identifier = {CommitIdentity.for_run(dag_id, run_id, identifier).commit_identifier: written
                     for run_id, written in runs.items()}
    return [by_identifier[s.commit_identifier] for s in table.snapshot_manager().list_snapshots()
            if s.commit_identifier in by_identifier]


def read_table(table) -> pd.DataFrame:
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pandas()


def assert_table_equals(table, expected: pd.DataFrame, key: str) -> pd.DataFrame:
    actual = read_table(table)
    assert not actual[key].duplicated().any(), f"duplicate keys: {actual[key][actual[key].duplicated()].tolist()[:10]}"
    actual = actual[list(expected.columns)].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected.reset_index(drop=True), check_dtype=False)
    return actual
