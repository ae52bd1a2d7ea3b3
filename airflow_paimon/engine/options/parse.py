"""One option's text parsed as Paimon's ConfigOptions parse it; a bad value fails with a ValidationError naming the
table, the option and the value."""
from __future__ import annotations

from pypaimon.common.memory_size import MemorySize
from pypaimon.common.time_utils import parse_duration

from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options.declared import BOOL, DURATION, ENUM, INT, MEMORY, Option


def given(options: dict, key: str) -> str | None:
    """The option's text; None when unset or blank (Paimon takes a blank value as unset)."""
    value = options.get(key)
    return None if value is None or str(value).strip() == "" else str(value)


def refuse(identifier: str, key: str, value, problem: str) -> ValidationError:
    return ValidationError(identifier, problem, option=key, value=value)


def parse(identifier: str, option: Option, key: str, raw: str):
    """``raw`` (given: not blank), the text of ``key`` (``option``'s key or one of its fallback or per-field keys),
    as ``option``'s kind."""
    if option.kind == INT:
        try:
            value = int(raw.strip())
        except ValueError:
            raise refuse(identifier, key, raw, "must be an integer") from None
        below = option.smallest is not None and value < option.smallest
        above = option.largest is not None and value > option.largest
        if value not in option.others and (below or above):
            raise refuse(identifier, key, raw, f"must be {option.range}")
        return value
    if option.kind == MEMORY:
        try:
            size = MemorySize.parse_bytes(raw)
        except ValueError as e:
            raise refuse(identifier, key, raw, f"is not a memory size such as '64 mb' ({e})") from None
        if size < 1:
            raise refuse(identifier, key, raw, "must be at least 1 byte")
        return size
    if option.kind == DURATION:
        try:
            return parse_duration(raw)
        except ValueError as e:
            raise refuse(identifier, key, raw, f"is not a duration such as '30 min', '1 h' or '7 d' ({e})") from None
    if option.kind == BOOL:
        if raw.strip().lower() not in ("true", "false"):
            raise refuse(identifier, key, raw, "must be true or false")
        return raw.strip().lower() == "true"
    if option.kind == ENUM:
        if raw.strip().lower() not in option.allowed:
            raise refuse(identifier, key, raw, f"is not supported (supported: {option.range})")
        return raw.strip().lower()
    return raw


def default_of(option: Option):
    """The option's declared default, parsed (None: unset)."""
    return None if option.default is None else parse("(declared default)", option, option.key, option.default)


def duration_ms(identifier: str, name: str, raw: str) -> int:
    """An argument given as a Paimon duration (an operator's ``expiration_time``), in milliseconds."""
    return parse(identifier, Option(name, DURATION, None, ""), name, raw)
