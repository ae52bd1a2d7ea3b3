"""Errors typed everywhere: the package raises no bare ``ValueError``, ``RuntimeError`` or ``PaimonJobError`` outside
the seams below. An untyped error counts as retryable (engine/errors.py is_retryable: a foreign one is not known to
be permanent), so a permanent refusal raised bare would be retried; each of ours names its class, which says."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BARE = {"ValueError", "RuntimeError", "PaimonJobError"}
# Modules allowed a bare raise, each with why no task's retry depends on its class
SEAMS = {
    "airflow_paimon/job_env/build.py": "the job_env command line's builder (python -m airflow_paimon.job_env "
                                       "create/pack): its errors end a person's command at a shell; no task runs it",
}


def bare_raises(source: str) -> list[tuple[int, str]]:
    """(line, class) of each ``raise X``, ``raise X(...)`` or ``raise m.X(...)`` of a class in BARE."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = raised.id if isinstance(raised, ast.Name) else getattr(raised, "attr", None)
            if name in BARE:
                found.append((node.lineno, name))
    return found


def _modules() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "airflow_paimon").rglob("*.py"))}


def test_no_bare_raise_outside_the_seams():
    stray = [f"{path}:{line} raise {name}" for path, source in _modules().items() if path not in SEAMS
             for line, name in bare_raises(source)]
    assert not stray, ("bare raises: raise a class of engine/errors.py (ValidationError, ConfigError, InternalError, "
                       "CorruptTableError, TransientError, ...) that says whether a retry helps:\n" + "\n".join(stray))


def test_every_seam_is_a_module_that_raises_bare():
    modules = _modules()
    assert all(reason for reason in SEAMS.values())
    stale = [path for path in SEAMS if not bare_raises(modules.get(path, ""))]
    assert not stale, f"no bare raise left in {stale}: drop them from SEAMS"


def test_every_spelling_of_a_bare_raise_is_seen():
    source = ("raise ValueError\nraise RuntimeError('x') from None\nraise errors.PaimonJobError('x')\n"
              "raise ValidationError('t', 'x')\nraise\nraise ConfigError('x')\n")
    assert bare_raises(source) == [(1, "ValueError"), (2, "RuntimeError"), (3, "PaimonJobError")]
