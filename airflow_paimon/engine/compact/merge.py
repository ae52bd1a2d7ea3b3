"""The merge function of a compaction, columnar: every version of a key in, one row per key out.

Rows keep their own sequence numbers (compaction never renumbers), so readers still order them against
files left out of the compaction.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_paimon.engine.errors import PaimonJobError
from airflow_paimon.engine.plan import RETRACT_KINDS as RETRACT, is_last_of_key

SEQUENCE, VALUE_KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
RETRACT_KINDS = pa.array(RETRACT, pa.int8())  # -U and -D
SUPPORTED = ("deduplicate", "first-row")


def check_supported(identifier: str, options: dict) -> None:
    """Refuse what this compaction cannot merge correctly, before anything is written."""
    engine = options.get("merge-engine", "deduplicate")
    if engine not in SUPPORTED:
        raise PaimonJobError(f"table {identifier}: compaction of merge-engine {engine!r} is not supported "
                             f"(supported: {', '.join(SUPPORTED)})")
    if str(options.get("deletion-vectors.enabled", "false")).lower() == "true":
        raise PaimonJobError(f"table {identifier}: compaction with deletion vectors is not supported")
    producer = options.get("changelog-producer", "none")
    if producer not in ("none", "input"):
        raise PaimonJobError(f"table {identifier}: changelog-producer {producer!r} needs changelog from "
                             "compaction, which is not supported")


def merge_key_values(kv: pa.Table, key_columns: list[str], merge_engine: str, sequence_fields: list[str],
                     sequence_ascending: bool, drop_delete: bool) -> pa.Table:
    """One row per key, sorted by key: the newest (deduplicate) or the oldest live (first-row) version."""
    if merge_engine == "first-row":
        kv = kv.filter(pc.invert(pc.is_in(kv.column(VALUE_KIND), RETRACT_KINDS)))
    if kv.num_rows == 0:
        return kv
    order = [(k, "ascending") for k in key_columns]
    order += [(f, "ascending" if sequence_ascending else "descending") for f in sequence_fields]
    order.append((SEQUENCE, "ascending"))
    kv = kv.take(pc.sort_indices(kv, sort_keys=order, null_placement="at_start"))
    keep = is_last_of_key(kv, key_columns) if merge_engine == "deduplicate" else _first_of_key(kv, key_columns)
    kv = kv.filter(keep)
    if drop_delete:
        kv = kv.filter(pc.invert(pc.is_in(kv.column(VALUE_KIND), RETRACT_KINDS)))
    return kv


def retract_counts(kv: pa.Table, row_counts: list[int]) -> list[int]:
    """Retraction rows per consecutive slice of ``kv`` (one slice per written file)."""
    retract = pc.is_in(kv.column(VALUE_KIND), RETRACT_KINDS).to_numpy(zero_copy_only=False)
    bounds = np.cumsum([0, *row_counts])
    cumulative = np.concatenate([[0], np.cumsum(retract, dtype=np.int64)])
    return [int(cumulative[e] - cumulative[s]) for s, e in zip(bounds[:-1], bounds[1:])]


def _first_of_key(kv: pa.Table, key_columns: list[str]) -> pa.Array:
    last = is_last_of_key(kv, key_columns)
    return pa.concat_arrays([pa.array([True]), last.slice(0, kv.num_rows - 1)])
