"""The incremental-read oracle: a pandas diff of two full pypaimon reads (time travel to each snapshot)."""
from __future__ import annotations

import pandas as pd

from oracle import read_table


def read_at(table, snapshot_id: int) -> pd.DataFrame:
    if snapshot_id == 0:
        return read_table(table).iloc[0:0]
    return read_table(table.copy({"scan.snapshot-id": str(snapshot_id)}))


def expected_diff(table, start: int, end: int, identity: list[str]) -> pd.DataFrame:
    """Rows new at ``end`` (+I), changed (+U, new values), gone (-D, old values), by ``identity`` (partition
    and primary keys), sorted by identity then row kind."""
    before, after = read_at(table, start), read_at(table, end)
    values = [c for c in after.columns if c not in identity]
    both = before.merge(after, on=identity, how="outer", suffixes=("_old", ""), indicator=True)
    changed = pd.Series(False, index=both.index)
    for v in values:
        old, new = both[v + "_old"], both[v]
        changed |= ~((old == new) | (old.isna() & new.isna()))
    inserted = both[both["_merge"] == "right_only"][identity + values].assign(row_kind="+I")
    updated = both[(both["_merge"] == "both") & changed][identity + values].assign(row_kind="+U")
    gone = both[both["_merge"] == "left_only"]
    deleted = gone[identity + [v + "_old" for v in values]].set_axis(identity + values, axis=1).assign(row_kind="-D")
    out = pd.concat([inserted, updated, deleted], ignore_index=True)[list(after.columns) + ["row_kind"]]
    return normalised(out, identity)


def normalised(df: pd.DataFrame, identity: list[str]) -> pd.DataFrame:
    return df.sort_values(identity + ["row_kind"]).reset_index(drop=True)
