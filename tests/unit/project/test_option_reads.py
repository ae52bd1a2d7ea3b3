"""Every table option is read through ``TableOptions`` (engine/options/: declared, parsed, viewed, checked): outside
that package no module names an option key — a quoted key such as ``"merge-engine"`` or an f-string such as
``f"fields.{name}.aggregate-function"`` — nor reads ``TableOptions.raw``, but where it names an option in an error
(an ``option=`` argument, or an argument of the calls in NAMING) and the few documented exceptions of ALLOWED."""
from __future__ import annotations

import ast
from pathlib import Path

from airflow_paimon.engine.options.declared import declared

PACKAGE = Path(__file__).resolve().parents[3] / "airflow_paimon"
OPTIONS_PACKAGE = PACKAGE / "engine" / "options"

# calls whose arguments name an option to say what is wrong with it, not to read it
NAMING = {"ValidationError", "check_function", "refuse", "_fail"}

# (module, key): why a module outside engine/options/ names the key; none of them reads it
ALLOWED: dict[tuple[str, str], str] = {
    **{("engine/table/table_alter.py", key): "FIXED_OPTIONS: options an ALTER may not change, named to refuse a change"
       for key in ("bucket", "bucket-key", "merge-engine", "sequence.field")},
    **{("operators/maintenance.py", key): "the operator's arguments, handed on as the options they override "
                                          "(TableOptions.with_overrides in the expiry job)"
       for key in ("snapshot.num-retained.min", "snapshot.num-retained.max", "snapshot.time-retained",
                   "snapshot.expire.limit")},
}


def _key(node: ast.AST) -> str | None:
    """The option key ``node`` spells (an f-string's fields read as a name), if it is a declared one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    else:
        return None
    try:
        declared(text)
    except KeyError:
        return None
    return text


def _called(call: ast.Call) -> str | None:
    return getattr(call.func, "attr", getattr(call.func, "id", None))


def option_reads(source: str, module: str) -> list[str]:
    """Where ``source`` (``module``, relative to the package) names or reads an option outside engine/options/."""
    tree = ast.parse(source)
    naming: set[int] = set()  # ids of nodes that name an option in an error
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            naming.update(id(k.value) for k in node.keywords if k.arg == "option")
            if _called(node) in NAMING:
                naming.update(id(a) for a in node.args)
    found = []
    for node in ast.walk(tree):
        key = _key(node)
        if key is not None and id(node) not in naming and (module, key) not in ALLOWED:
            found.append(f"{module}:{node.lineno}: names the option {key!r}")
        if isinstance(node, ast.Attribute) and node.attr == "raw":
            found.append(f"{module}:{node.lineno}: reads TableOptions.raw")
    return sorted(found, key=lambda hit: int(hit.split(":")[1]))


def test_no_option_is_read_outside_the_options_package():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if OPTIONS_PACKAGE not in path.parents
             for hit in option_reads(path.read_text(), path.relative_to(PACKAGE).as_posix())]
    assert not found, ("read these options through TableOptions (a typed property or view, engine/options/), or "
                       "document an exception in ALLOWED:\n" + "\n".join(found))


def test_every_exception_is_still_needed():
    named = {(path.relative_to(PACKAGE).as_posix(), key) for path in PACKAGE.rglob("*.py")
             if OPTIONS_PACKAGE not in path.parents
             for node in ast.walk(ast.parse(path.read_text())) if (key := _key(node)) is not None}
    assert set(ALLOWED) <= named, f"exceptions no module needs: {sorted(set(ALLOWED) - named)}"


def test_a_read_by_hand_is_found():
    source = '''
def f(table, options, name):
    engine = options.get("merge-engine", "deduplicate")
    function = options.get(f"fields.{name}.aggregate-function")
    raw = TableOptions.of(table).raw
    raise ValidationError("db.t", "bad", option="bucket", value=options.get("bucket"))
'''
    assert option_reads(source, "probe.py") == [
        "probe.py:3: names the option 'merge-engine'", "probe.py:4: names the option 'fields.x.aggregate-function'",
        "probe.py:5: reads TableOptions.raw", "probe.py:6: names the option 'bucket'"]
