"""The linter and the type checker, as pyproject.toml configures them ([tool.ruff]: the package, the entry
scripts, the DAGs and the tests; [tool.mypy]: the package), find nothing. Each runs as a subprocess of this
interpreter, the venv's, and a finding fails the test with its output."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", "--no-cache", "--output-format", "concise")
    assert done.returncode == 0, f"ruff check found:\n{done.stdout}{done.stderr}"


def test_mypy_finds_nothing():
    # its cache (.mypy_cache, git-ignored) makes a run after a small change take seconds
    done = _run("mypy")
    assert done.returncode == 0, f"mypy found:\n{done.stdout}{done.stderr}"
