"""The job environment's constraints file (airflow_paimon/job_env/constraints.txt), made from this repo's uv.lock:
the version uv.lock pins for each package the ``jobs`` extra needs (the extra's requirements and everything they
depend on, as the lock records it), so that ``job_env create`` installs the same tree on any day.

Regenerate it after ``uv lock`` (tests/unit/jobs/test_job_env.py fails while it differs from the lock)::

    .venv/bin/python tests/job_env_lock.py
"""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "uv.lock"
CONSTRAINTS = ROOT / "airflow_paimon" / "job_env" / "constraints.txt"
PROJECT = "airflow-paimon"
EXTRA = "jobs"
# The lock's versions of these are [tool.uv] override-dependencies, settled for this repo's one environment holding
# both sides (cachetools 8 for Airflow); a job environment has no Airflow and keeps its own packages' bounds
# (pypaimon 2.1.0: cachetools>=5,<6), so its pin is the newest release within them.
JOB_SIDE_OWN = {"cachetools": "5.5.2"}
# The Pythons the lock's versions were checked on for a job environment (`uv pip compile` with these constraints
# on each, wheels only): numpy 2.3 has none for 3.10, pyarrow 19 (pypaimon 2.1: pyarrow<20) none for 3.14.
PYTHONS = ">=3.11,<3.14"


def closure(lock: dict) -> dict[str, str]:
    """name -> the lock's version for the jobs extra of the project and everything it depends on."""
    packages = {p["name"]: p for p in lock["package"]}
    todo = [(d["name"], tuple(d.get("extra", ()))) for d in packages[PROJECT]["optional-dependencies"][EXTRA]]
    seen: set[tuple[str, tuple]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        package = packages[name]
        deps = list(package.get("dependencies", []))
        for extra in extras:
            deps += package.get("optional-dependencies", {}).get(extra, [])
        todo += [(d["name"], tuple(d.get("extra", ()))) for d in deps]
    return {name: packages[name]["version"] for name, _ in sorted(seen)}


def expected() -> str:
    pins = {**closure(tomllib.loads(LOCK.read_text())), **JOB_SIDE_OWN}
    header = [
        "# The job environment's versions: `python -m airflow_paimon.job_env create` installs the jobs extra under",
        "# these constraints (override with --constraint FILE). Made from uv.lock by tests/job_env_lock.py: do not",
        "# edit by hand.",
        f"# python: {PYTHONS}",
    ]
    return "\n".join(header + [f"{name}=={version}" for name, version in sorted(pins.items())]) + "\n"


if __name__ == "__main__":
    CONSTRAINTS.write_text(expected())
    print(f"wrote {CONSTRAINTS.relative_to(ROOT)}")
