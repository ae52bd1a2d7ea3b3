"""Random upsert batches for a cross-partition table (key ``id``, partition ``dt``, value ``v``, row kind
``op``): inserts, in-place updates, moves to another partition, deletes (of live and of unknown keys) and
in-batch duplicate keys, drawn from the oracle's current state with a seeded generator."""
from __future__ import annotations

import numpy as np
import pandas as pd

PARTITIONS = np.array(["a", "b", "c", "d"])
TABLE_SPEC = {"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]], "primary_keys": ["id"],
              "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "40"}}
ROW_KIND = "op"


def random_batch(rng: np.random.Generator, live: pd.DataFrame, next_id: int, rows: int) -> tuple[pd.DataFrame, int]:
    """About ``rows`` rows against the ``live`` table (id, dt, v); returns the batch and the next unused id."""
    n_update, n_move, n_delete, n_insert = (rng.multinomial(rows, [0.25, 0.2, 0.15, 0.4]) if len(live)
                                            else (0, 0, 0, rows))
    picked = live.iloc[rng.permutation(len(live))]
    updates = picked.iloc[:n_update].assign(v=rng.random(n_update), op="+U")
    moved = picked.iloc[n_update:n_update + n_move]
    moves = moved.assign(dt=[rng.choice(PARTITIONS[PARTITIONS != d]) for d in moved["dt"]],
                         v=rng.random(len(moved)), op="+U")
    deleted = picked.iloc[n_update + n_move:n_update + n_move + n_delete].assign(op="-D")
    unknown = pd.DataFrame({"id": next_id + rows + np.arange(2), "dt": rng.choice(PARTITIONS, 2),
                            "v": rng.random(2), "op": "-D"})  # deleting a key that never existed: a no-op
    inserts = pd.DataFrame({"id": next_id + np.arange(n_insert), "dt": rng.choice(PARTITIONS, n_insert),
                            "v": rng.random(n_insert), "op": "+I"})
    batch = pd.concat([f for f in (updates, moves, deleted, unknown, inserts) if len(f)], ignore_index=True)
    batch = batch.iloc[rng.permutation(len(batch))]
    # in-batch duplicates: rows of this batch again, later, as another place/value or a delete (last wins)
    again = batch.sample(n=max(1, rows // 10), random_state=int(rng.integers(2**31)))
    again = again.assign(dt=rng.choice(PARTITIONS, len(again)), v=rng.random(len(again)),
                         op=rng.choice(["+I", "+U", "-D"], len(again), p=[0.4, 0.4, 0.2]))
    batch = pd.concat([batch, again], ignore_index=True)
    return batch.astype({"id": "int64", "v": "float64"})[["id", "dt", "v", "op"]], next_id + rows + 2
