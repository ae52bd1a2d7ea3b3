"""ALTER TABLE as this provider allows it: options set or reset, nullable columns added at the end, columns
widened. Never a drop, rename or narrowing; never a change of what decides where a row lives (bucket, keys,
merge engine).

The changes are computed against the table as it is, so an ALTER that already happened is no change at all:
a retry commits no new schema. Everything is checked — the resulting option set with engine/options/checks.py,
each column change with ``check_column_change`` — before pypaimon's ``catalog.alter_table`` writes a schema.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from airflow_paimon.engine.errors import ValidationError

MAX_VARCHAR = 2147483647  # STRING is VARCHAR(2147483647), as in Paimon
MAX_DECIMAL_PRECISION = 38
# Options that decide where a row lives or how rows merge: files written under the old value would be wrong
# under the new one. Paimon's own immutable options (CoreOptions.IMMUTABLE_OPTIONS) are refused too.
FIXED_OPTIONS = ("bucket", "bucket-key", "merge-engine", "primary-key", "partition", "sequence.field")
INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")  # each widens to any later one


@dataclass(frozen=True)
class SqlType:
    """A Paimon SQL type as written, normalised: root (INTEGER → INT, STRING → VARCHAR), parameters,
    nullability."""
    root: str
    params: tuple[int, ...] = ()
    nullable: bool = True

    def __str__(self) -> str:
        if self.root == "VARCHAR" and self.params == (MAX_VARCHAR,):
            text = "STRING"
        else:
            text = self.root + (f"({','.join(map(str, self.params))})" if self.params else "")
        return text if self.nullable else text + " NOT NULL"


def parse_type(sql: str) -> SqlType:
    """``sql`` normalised (no validation beyond the shape: Paimon's parser checks the type itself)."""
    text = re.sub(r"\s+", " ", str(sql).strip().upper())
    nullable = not text.endswith(" NOT NULL")
    text = text.removesuffix(" NOT NULL").removesuffix(" NULL").replace(" ", "")
    m = re.fullmatch(r"([A-Z_]+)(?:\(([\d,]+)\))?", text)
    if not m:
        return SqlType(text, (), nullable)
    root, params = m.group(1), tuple(int(p) for p in (m.group(2) or "").split(",") if p)
    root = {"INTEGER": "INT", "STRING": "VARCHAR"}.get(root, root)
    if root == "VARCHAR" and not params:
        params = (MAX_VARCHAR,)
    return SqlType(root, params, nullable)


def widens(old_type: str, new_type: str) -> bool:
    """The one widening rule (ALTER and write-time schema evolution): ``new_type`` is strictly wider than
    ``old_type`` in a way every Paimon reader casts old files to — a longer integer (TINYINT → … → BIGINT),
    FLOAT → DOUBLE, VARCHAR(n) → VARCHAR(m > n) or STRING, DECIMAL(p, s) → DECIMAL(p' > p, s)."""
    old, new = parse_type(old_type), parse_type(new_type)
    if old.root in INTEGERS and new.root in INTEGERS:
        return INTEGERS.index(new.root) > INTEGERS.index(old.root)
    if (old.root, new.root) == ("FLOAT", "DOUBLE"):
        return True
    if old.root == new.root == "VARCHAR" and len(old.params) == len(new.params) == 1:
        return new.params[0] > old.params[0]
    return (old.root == new.root == "DECIMAL" and len(old.params) == len(new.params) == 2
            and new.params[1] == old.params[1] and old.params[0] < new.params[0] <= MAX_DECIMAL_PRECISION)


def check_column_change(table: str, name: str, old_type: str, new_type: str) -> bool:
    """Whether changing column ``name`` from ``old_type`` to ``new_type`` is a change (False: the same type);
    ValidationError naming the table, column and types when it is not a widening (``widens``). Nullability is
    the column's own and is not changed."""
    old, new = parse_type(old_type), parse_type(new_type)
    if (old.root, old.params) == (new.root, new.params):
        return False
    if not widens(old_type, new_type):
        raise ValidationError(table, f"cannot change type {old} to {new}: only a longer integer, FLOAT → DOUBLE, "
                                     "VARCHAR(n) → VARCHAR(m > n) or STRING and DECIMAL(p, s) → DECIMAL(p' > p, s) "
                                     "are allowed (never a narrowing or another type)", column=name, value=new_type)
    return True


def check_added_column(table: str, name: str, type_sql: str, existing: dict[str, str]) -> bool:
    """Whether adding column ``name`` is a change (False: it is there already, with that type); refused when it
    is there with another type, or declared NOT NULL (rows written before have no value for it)."""
    wanted = parse_type(type_sql)
    if not wanted.nullable:
        raise ValidationError(table, "an added column must be nullable (rows written before have no value)",
                              column=name, value=type_sql)
    if name not in existing:
        return True
    have = parse_type(existing[name])
    if (have.root, have.params) != (wanted.root, wanted.params):
        raise ValidationError(table, f"column exists with type {existing[name]}; adding it again as {type_sql} "
                                     "is refused", column=name, value=type_sql)
    return False


@dataclass
class AlterPlan:
    """What an ALTER changes on a table as it is now; empty when it already happened."""
    set_options: dict[str, str] = field(default_factory=dict)
    reset_options: list[str] = field(default_factory=list)
    add_columns: list[tuple[str, str]] = field(default_factory=list)
    widen_columns: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.set_options or self.reset_options or self.add_columns or self.widen_columns)

    def describe(self) -> list[str]:
        return ([f"set {k}={v}" for k, v in self.set_options.items()] + [f"reset {k}" for k in self.reset_options]
                + [f"add column {n} {t}" for n, t in self.add_columns]
                + [f"widen column {n} to {t}" for n, t in self.widen_columns])


def plan_alter(table: str, columns: dict[str, str], primary_keys: list[str], partition_keys: list[str],
               options: dict[str, str], set_options: dict | None = None, reset_options: list | None = None,
               add_columns: list | None = None, widen_columns: list | None = None,
               immutable: frozenset[str] = frozenset()) -> AlterPlan:
    """The changes still to make, each checked (but not the resulting option set: ``check_plan`` does that)."""
    plan = AlterPlan()
    for key, value in (set_options or {}).items():
        key, value = str(key), str(value)
        if options.get(key) == value:
            continue
        if key in FIXED_OPTIONS or key in immutable:
            raise ValidationError(table, f"cannot be changed on an existing table (it is {options.get(key)!r}); "
                                         "it decides where rows live or how they merge", option=key, value=value)
        plan.set_options[key] = value
    for key in reset_options or []:
        key = str(key)
        if key in plan.set_options:
            raise ValidationError(table, "both set and reset in one ALTER", option=key, value=plan.set_options[key])
        if key not in options:
            continue
        if key in FIXED_OPTIONS or key in immutable:
            raise ValidationError(table, "cannot be reset on an existing table", option=key, value=options[key])
        plan.reset_options.append(key)
    for pair in add_columns or []:
        name, type_sql = _pair(table, pair, "add_columns")
        if check_added_column(table, name, type_sql, columns):
            plan.add_columns.append((name, type_sql))
    for pair in widen_columns or []:
        name, type_sql = _pair(table, pair, "widen_columns")
        if name not in columns:
            raise ValidationError(table, "no such column to widen", column=name, value=type_sql)
        if name in primary_keys or name in partition_keys:
            raise ValidationError(table, "a primary-key or partition column's type cannot change", column=name,
                                  value=type_sql)
        if check_column_change(table, name, columns[name], type_sql):
            plan.widen_columns.append((name, type_sql))
    return plan


def _pair(table: str, pair, argument: str) -> tuple[str, str]:
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ValidationError(table, f"{argument} entries must be [name, type] pairs, not {pair!r}")
    return str(pair[0]), str(pair[1])


def resulting_options(options: dict[str, str], plan: AlterPlan) -> dict[str, str]:
    out = {**options, **plan.set_options}
    for key in plan.reset_options:
        out.pop(key, None)
    return out
