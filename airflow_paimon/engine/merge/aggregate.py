"""The aggregation merge engine's field aggregators, columnar: Paimon's AggregateMergeFunction over every key's
records at once (records sorted by key, then merge order; a key starting at each of ``starts``).

Per field: ``fields.<name>.aggregate-function`` (else ``fields.default-aggregate-function``, else
``last_non_null_value``); primary-key fields keep their value and sequence fields take ``last_value``, as in
Paimon. A -U/-D record retracts (sum subtracts, last_value / last_non_null_value clear) unless
``fields.<name>.ignore-retract``; functions Paimon cannot retract are refused when a retraction reaches them.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_paimon.engine.codec.kinds import is_retract
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.options.checks import check_function, function_name
from airflow_paimon.engine.options.declared import DEFAULT_AGGREGATE_FUNCTION, RETRACTABLE_AGGREGATES


def field_function(name: str, options: TableOptions, primary_keys, sequence_fields) -> str:
    """Paimon's AggregateMergeFunction.getAggFuncName."""
    if name in sequence_fields:
        return "last_value"
    if name in primary_keys:
        return "primary_key"
    return function_name(str(options.aggregate_function(name) or DEFAULT_AGGREGATE_FUNCTION).strip())


def aggregate(values: pa.Table, kinds: np.ndarray, starts: np.ndarray, options: TableOptions, primary_keys,
              sequence_fields, identifier: str) -> pa.Table:
    """One row per key (each key's records contiguous, in merge order, starting at ``starts``)."""
    n, groups = values.num_rows, len(starts)
    retract = is_retract(kinds)
    group = np.repeat(np.arange(groups), np.diff(np.append(starts, n)))
    columns = {}
    for name in values.column_names:
        fn = field_function(name, options, primary_keys, sequence_fields)
        check_function(identifier, f"fields.{name}.aggregate-function", fn)
        acting = ~retract if options.ignore_retract(name) else np.ones(n, dtype=bool)
        retracts = retract & acting
        if retracts.any() and fn not in RETRACTABLE_AGGREGATES:
            why = ("compaction does not implement its retraction" if fn == "product"
                   else "which Paimon cannot retract")
            raise ValidationError(
                identifier, f"field {name!r} aggregates with {fn!r}, {why}: {int(retracts.sum())} -U/-D "
                f"records are being merged; set 'fields.{name}.ignore-retract' = 'true' to ignore them")
        col = values.column(name).combine_chunks()
        columns[name] = _FUNCTIONS[fn](_Field(identifier, name, col, acting, retracts, group, starts, groups))
    return pa.table(columns, schema=values.schema)


class _Field:
    """One field's records: ``acting`` those the aggregator sees, ``retracts`` the acting -U/-D ones."""

    def __init__(self, identifier, name, col, acting, retracts, group, starts, groups):
        self.identifier, self.name, self.col = identifier, name, col
        self.acting, self.retracts, self.group, self.starts, self.groups = acting, retracts, group, starts, groups
        self.valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False))

    def pick(self, candidate: np.ndarray, *, last: bool, null_if: np.ndarray | None = None) -> pa.Array:
        """Per key, the value of its last (or first) candidate record; null when it has none."""
        n = len(candidate)
        pos = np.arange(n)
        if last:
            idx = np.maximum.reduceat(np.where(candidate, pos, -1), self.starts)
        else:
            idx = np.minimum.reduceat(np.where(candidate, pos, n), self.starts)
            idx[idx == n] = -1
        missing = idx < 0
        idx = np.where(missing, 0, idx)
        if null_if is not None:
            missing |= null_if[idx]
        return self.col.take(pa.array(idx, mask=missing))

    def present(self, use: np.ndarray) -> np.ndarray:
        return np.add.reduceat(use.astype(np.int64), self.starts) > 0

    def fail(self, fn: str, why: str):
        raise ValidationError(self.identifier, f"field {self.name!r} ({self.col.type}) with aggregate function "
                                                   f"{fn!r}: {why}")


def _primary_key(f: _Field) -> pa.Array:
    return f.pick(f.acting, last=True)


def _last_value(f: _Field) -> pa.Array:
    return f.pick(f.acting, last=True, null_if=f.retracts)  # a retraction clears it


def _last_non_null_value(f: _Field) -> pa.Array:
    return f.pick(f.acting & f.valid, last=True, null_if=f.retracts)  # a non-null retraction clears it


def _first_value(f: _Field) -> pa.Array:
    return f.pick(f.acting, last=False)


def _first_non_null_value(f: _Field) -> pa.Array:
    return f.pick(f.acting & f.valid, last=False)


def _numbers(f: _Field, fn: str) -> tuple[np.ndarray, np.ndarray]:
    t = f.col.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        f.fail(fn, "needs an integer or floating-point column" + (" (decimal is not implemented)"
                                                                  if pa.types.is_decimal(t) else ""))
    use = f.acting & f.valid
    return np.asarray(f.col.fill_null(0).to_numpy(zero_copy_only=False)), use


def _exact_integers(f: _Field, fn: str, total: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Paimon's addExact / multiplyExact: refuse a result outside the column's integer type."""
    info = np.iinfo(f.col.type.to_pandas_dtype())
    if (magnitude >= 2.0 ** 62).any() or (total < info.min).any() or (total > info.max).any():
        f.fail(fn, f"the result overflows {f.col.type}")
    return total


def _sum(f: _Field) -> pa.Array:
    v, use = _numbers(f, "sum")
    signed = np.where(f.retracts, -v, v)  # Paimon: acc - x on retraction (-x on an empty accumulator)
    if pa.types.is_integer(f.col.type):
        signed = np.where(use, signed, 0).astype(np.int64)
        total = np.add.reduceat(signed, f.starts)
        _exact_integers(f, "sum", total, np.add.reduceat(np.abs(signed).astype(np.float64), f.starts))
    else:
        # add in merge order, one record at a time in the column's own precision, as Paimon does; -0.0 is
        # the exact identity (x + -0.0 == x for every x, -0.0 included)
        total = np.full(f.groups, -0.0, dtype=v.dtype)
        np.add.at(total, f.group, np.where(use, signed, -0.0).astype(v.dtype))
    return pa.array(total, mask=~f.present(use)).cast(f.col.type)


def _product(f: _Field) -> pa.Array:
    v, use = _numbers(f, "product")
    if pa.types.is_integer(f.col.type):
        factors = np.where(use, v, 1).astype(np.int64)
        total = np.multiply.reduceat(factors, f.starts)
        logs = np.add.reduceat(np.log2(np.maximum(np.abs(factors), 1)).astype(np.float64), f.starts)
        _exact_integers(f, "product", total, 2.0 ** np.minimum(logs, 1000))
    else:
        total = np.ones(f.groups, dtype=v.dtype)
        np.multiply.at(total, f.group, np.where(use, v, 1).astype(v.dtype))  # in merge order, like Paimon
    return pa.array(total, mask=~f.present(use)).cast(f.col.type)


def _extreme(f: _Field, fn: str) -> pa.Array:
    use = f.acting & f.valid
    if pa.types.is_floating(f.col.type):
        # Paimon compares with Double.compare: NaN is the greatest value
        v = np.asarray(f.col.fill_null(0).to_numpy(zero_copy_only=False))
        nan = np.isnan(v)
        if fn == "max":
            total = np.full(f.groups, -np.inf, dtype=v.dtype)
            np.maximum.at(total, f.group, np.where(use, v, -np.inf).astype(v.dtype))  # NaN propagates
        else:
            total = np.full(f.groups, np.inf, dtype=v.dtype)
            np.minimum.at(total, f.group, np.where(use & ~nan, v, np.inf).astype(v.dtype))
            all_nan = np.add.reduceat((use & ~nan).astype(np.int64), f.starts) == 0
            total[all_nan] = np.nan
        return pa.array(total, mask=~f.present(use)).cast(f.col.type)
    return _grouped(f, use, fn)


def _grouped(f: _Field, use: np.ndarray, fn: str) -> pa.Array:
    """An order-free aggregate with pyarrow's group-by over the used records; null for a key with none."""
    keep = pa.array(use)
    t = pa.table({"g": pa.array(f.group).filter(keep), "v": f.col.filter(keep)})
    if t.num_rows == 0:
        return pa.nulls(f.groups, f.col.type)
    try:
        res = t.group_by("g", use_threads=False).aggregate([("v", fn)])
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
        f.fail(fn, str(e))
    slot = np.full(f.groups, -1, dtype=np.int64)
    slot[np.asarray(res.column("g").to_numpy())] = np.arange(res.num_rows)
    return res.column(f"v_{fn}").combine_chunks().take(pa.array(np.where(slot < 0, 0, slot), mask=slot < 0)) \
        .cast(f.col.type)


def _boolean(f: _Field, fn: str) -> pa.Array:
    if not pa.types.is_boolean(f.col.type):
        f.fail(fn, "needs a BOOLEAN column")
    return _grouped(f, f.acting & f.valid, "all" if fn == "bool_and" else "any")


_FUNCTIONS = {
    "primary_key": _primary_key,
    "last_value": _last_value,
    "last_non_null_value": _last_non_null_value,
    "first_value": _first_value,
    "first_non_null_value": _first_non_null_value,
    "sum": _sum,
    "product": _product,
    "max": lambda f: _extreme(f, "max"),
    "min": lambda f: _extreme(f, "min"),
    "bool_and": lambda f: _boolean(f, "bool_and"),
    "bool_or": lambda f: _boolean(f, "bool_or"),
}

