"""Every exception class the package defines, whether a retry of its task is expected, and an instance of each:
what the retry tests raise."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "airflow_paimon"
# Whether Airflow retries a task failing with each error (docs/reliability.md): a new error class gets a line
RETRIED = {"PaimonJobError": True, "ValidationError": False, "UnsafePathError": False, "StaleIndexError": False,
           "IndexGoneError": True, "RolledBackError": False, "TableChangedError": False, "MissingFileError": False,
           "SpecError": False,
           "NoExclusiveCreateError": False, "EscapeError": False, "KeyTwice": False, "CompactConflictError": True,
           "JobKilled": True, "StepError": True, "FinalStepError": False, "StepValidationError": False,
           "NoJobEnvironment": False, "TableNotFound": True, "StaleWriteError": False, "HalfCommittedError": False,
           "UnknownCommitError": False, "TransientError": True, "CorruptTableError": False, "InternalError": False,
           "ConfigError": False,
           "OSError": True}  # not this provider's: an object store timing out, a crash


def error_classes() -> list[type[BaseException]]:
    """Every exception class defined in the package (found in the source, so a new module is never missed)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        names = [n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]
        if not names:
            continue
        module = importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
                                         .removesuffix(".__init__"))
        found += [cls for name in names if isinstance(cls := getattr(module, name, None), type)
                  and issubclass(cls, BaseException) and cls.__module__ == module.__name__]
    return found


def instance(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` (each class takes its own arguments)."""
    if cls.__name__ == "ValidationError":
        return cls("db.t", "bad input")
    return cls("bad segment/..") if cls.__name__ == "UnsafePathError" else cls("failed on purpose")
