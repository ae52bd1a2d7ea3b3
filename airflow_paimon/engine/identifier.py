"""Table identifiers as this provider accepts them: ``database.table``, Paimon's Identifier without the rest.

Every path the provider derives for a table (its index, staging and result directories) embeds the
identifier, and pypaimon's filesystem catalog joins it into the table path; so a name such as
``demo.orders/../..`` would open (and let clean-ups delete in) a directory that is not the table's. One
check, here, runs wherever an identifier comes in: the operators before submitting, every Spark job, the
hook, and each path derivation.

Accepted: exactly one dot between a database and a table name, each an allow-list of Paimon identifier
characters: ASCII letters, digits, ``_`` and ``-`` (not first). Everything else is refused, and said why:
a path separator or ``..`` (escapes), ``%`` (pyarrow percent-decodes ``file://`` URIs: ``t%2F%2E%2E`` is
``t/..``), ``#`` and ``?`` (a URI parser cuts there: ``db.t#x`` would be ``db.t``), whitespace and control
characters. Paimon's ``table$branch_x`` / ``table$snapshots`` suffixes (branches, system tables) are refused:
this provider writes the main branch of real tables only.
"""
from __future__ import annotations

import re

from airflow_paimon.engine.errors import ValidationError

_SHOWN = 200  # longest part of a bad name echoed in an error
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")


def validate_identifier(identifier) -> str:
    """``identifier`` unchanged if it is a plain ``database.table``; else a ValidationError naming it."""
    if not isinstance(identifier, str):
        raise ValidationError(repr(identifier)[:_SHOWN], "a table identifier must be a string 'database.table'")
    problem = _problem(identifier)
    if problem:
        shown = identifier if len(identifier) <= _SHOWN else identifier[:_SHOWN] + "..."
        raise ValidationError(repr(shown), f"invalid table identifier: {problem} (expected 'database.table')")
    return identifier


def _problem(identifier: str) -> str | None:
    if _CONTROL.search(identifier):
        return "contains a control character"
    if "/" in identifier or "\\" in identifier:
        return "contains a path separator"
    if ".." in identifier:
        return "contains '..'"
    if identifier.count(".") != 1:
        return "must contain exactly one '.' between database and table"
    database, table = identifier.split(".")
    if not database.strip() or not table.strip():
        return "database and table must both be non-empty"
    if database != database.strip() or table != table.strip():
        return "leading or trailing whitespace"
    if "$" in identifier:
        return "branch and system-table suffixes ('$...') are not supported"
    for char, why in (("%", "'%' (percent-encoding)"), ("#", "'#'"), ("?", "'?'")):
        if char in identifier:
            return f"contains {why}"
    if any(c.isspace() for c in identifier):
        return "contains whitespace"
    if not (_NAME.match(database) and _NAME.match(table)):
        return "database and table names allow only ASCII letters, digits, '_' and '-' (not first)"
    return None
