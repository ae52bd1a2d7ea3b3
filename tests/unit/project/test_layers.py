"""The package's floors (docs/internals.md, "Layers"): a module imports from its own floor and the floors below,
never from one above — module-level and function-level imports and ``importlib.import_module("...")`` alike —
and no two packages — nor two modules — import each other, directly or round a circle."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "airflow_paimon"

# Lowest floor first; each names packages and modules of airflow_paimon: a module's package is the longest name
# that is it or prefixes it ("engine" and "job_env": their __init__ alone; "": the rest, the Airflow side).
# docs/internals.md draws the same table.
FLOORS: list[tuple[str, ...]] = [
    # what every floor uses: errors, crash points, memory, the pypaimon seam, identifiers; Paimon's bytes; the
    # table options declared, parsed, viewed and checked; the jobs' specs and results
    ("engine", "engine.errors", "engine.faults", "engine.memory", "engine.paimon_compat", "engine.identifier",
     "engine.codec", "engine.options", "engine.jobs"),
    ("engine.files",  # a table's files and where they live: storage, layout, scan, data files, deletion vectors
     "table_files",  # Paimon's metadata files read as JSON, without pypaimon (the Airflow side's light reader)
     "handoff"),  # what crosses between a task and its job or step: spec file, result file, error envelope, redaction
    ("engine.snapshot",),  # a table's history: its snapshots newest first, a base as a snapshot, cursors
    ("engine.table",),  # a table's metadata and schema: catalog, handle, ALTER, schema evolution, lifecycle
    ("engine.merge",),  # the merge engines' rules and merge function
    ("engine.index",),  # the global key index
    ("engine.assign",),  # assigning keys to buckets, one TableShape per bucket mode
    ("engine.commit",),  # staging and committing snapshots
    ("engine.write", "engine.maintenance"),  # writing a bucket; expiry, orphan files, rollback
    ("engine.compact", "engine.read"),  # compaction; incremental and changelog reads
    ("engine.runs",),  # one orchestration per job
    ("job_env",),  # where the job side runs: an interpreter and an archive, from the connection or the config
    ("spark",),  # Spark glue: the jobs' functions, their registry, their frame, submission and Spark Connect
    ("",),  # the Airflow side: operators, hooks, sensors, triggers, ui, assets, lineage, job_env's steps
]
EXACT = {"engine", "job_env"}
# Imports allowed to go up a floor (left out of the circle check too): none.
ALLOWED_UP: set[tuple[str, str]] = set()


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(module: str) -> list[tuple[str, int]]:
    """(imported module of the package, line) for every import in ``module``, wherever it is in the file."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{module}:{node.lineno}: a relative import; name the module")
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                     for a in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) ==
              "import_module" and node.args and isinstance(node.args[0], ast.Constant)):
            names = [node.args[0].value]
        found += [(n, node.lineno) for n in names if n in MODULES and n != module]
    return found


def package_of(module: str) -> str:
    """The longest name of FLOORS that is ``module`` or prefixes it ("" and "engine": their __init__ only)."""
    relative = module.removeprefix("airflow_paimon").removeprefix(".")
    names = [n for floor in FLOORS for n in floor
             if relative == n or (n not in EXACT and (n == "" or relative.startswith(n + ".")))]
    package = max(names, key=len)
    assert package or not relative.startswith("engine."), f"{module} is on no floor: add it to FLOORS (and docs)"
    return package


FLOOR = {name: i for i, floor in enumerate(FLOORS) for name in floor}
EDGES = [(module, target, line) for module in MODULES for target, line in imports(module)]


def test_every_module_has_a_floor():
    names = [n for floor in FLOORS for n in floor]
    assert len(names) == len(set(names)), "a name is on two floors"
    unused = {n for n in names if not any(package_of(m) == n for m in MODULES)}
    assert not unused, f"floors name what is not in the package: {sorted(unused)}"


def up_imports(edges) -> list[str]:
    return [f"{module} (line {line}) imports {target}: floor {FLOOR[package_of(module)]} "
            f"({package_of(module) or 'the Airflow side'}) imports floor {FLOOR[package_of(target)]} "
            f"({package_of(target) or 'the Airflow side'})"
            for module, target, line in edges
            if FLOOR[package_of(target)] > FLOOR[package_of(module)] and (module, target) not in ALLOWED_UP]


def airflow_side_package(module: str) -> str:
    """On the Airflow side (floor ""), a module's own package (operators, ui, job_env's tools, ...); below it, its
    floor's package as before."""
    package = package_of(module)
    return package or "airflow side: " + module.removeprefix("airflow_paimon").removeprefix(".").split(".")[0]


def circles(edges, package_of=package_of) -> list[str]:
    """Each circle of imports between packages, as the imports that make it."""
    graph: dict[str, dict[str, str]] = {}
    for module, target, line in edges:
        a, b = package_of(module), package_of(target)
        if a != b and (module, target) not in ALLOWED_UP:
            graph.setdefault(a, {}).setdefault(b, f"{module} (line {line}) imports {target}")
    found, done = [], set()

    def visit(package: str, path: list[str]) -> None:
        for nxt in graph.get(package, {}):
            if nxt in path:
                loop = path[path.index(nxt):] + [nxt]
                found.append(" -> ".join(graph[a][b] for a, b in zip(loop, loop[1:])))
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(package)

    for package in list(graph):
        if package not in done:
            visit(package, [package])
    return found


def test_no_import_goes_up_a_floor():
    assert len(ALLOWED_UP) <= 1
    assert not up_imports(EDGES), "imports that go up a floor:\n" + "\n".join(up_imports(EDGES))


def test_no_circle_between_packages():
    assert not circles(EDGES), "import circles between packages:\n" + "\n".join(circles(EDGES))


def test_no_circle_between_modules():
    """No two modules import each other, directly or round a circle, inside a package too (function-level imports
    included)."""
    found = circles(EDGES, lambda module: module)
    assert not found, "import circles between modules:\n" + "\n".join(found)


def test_no_circle_between_the_airflow_sides_packages():
    """Operators, hooks, sensors, triggers, the UI, the job environment's tools: none round a circle (the UI's
    reads are steps the UI names, not entries in a table of the job environment's)."""
    found = circles(EDGES, airflow_side_package)
    assert not found, "import circles on the Airflow side:\n" + "\n".join(found)


def test_an_import_up_or_round_a_circle_is_found():
    planted = [("airflow_paimon.engine.files.scan", "airflow_paimon.engine.runs.commit", 7),
               ("airflow_paimon.engine.runs.commit", "airflow_paimon.engine.files.scan", 9)]
    assert up_imports(planted) == ["airflow_paimon.engine.files.scan (line 7) imports "
                                   "airflow_paimon.engine.runs.commit: floor 1 (engine.files) imports floor 10 "
                                   "(engine.runs)"]
    assert len(circles(planted)) == 1 and "engine.files.scan (line 7)" in circles(planted)[0]
    airflow_side = [("airflow_paimon.ui.app", "airflow_paimon.job_env.step", 3),
                    ("airflow_paimon.job_env.steps", "airflow_paimon.ui.tables", 5)]
    assert circles(airflow_side) == []  # one floor for the whole Airflow side
    assert len(circles(airflow_side, airflow_side_package)) == 1
    in_a_package = [("airflow_paimon.engine.options.table_options", "airflow_paimon.engine.options.views", 9),
                    ("airflow_paimon.engine.options.views", "airflow_paimon.engine.options.table_options", 49)]
    assert circles(in_a_package) == []  # one package
    assert len(circles(in_a_package, lambda module: module)) == 1


@pytest.mark.parametrize("source,expected", [
    ("import airflow_paimon.engine.files.scan\n", ["airflow_paimon.engine.files.scan"]),
    ("def f():\n    from airflow_paimon.engine.files import scan\n", ["airflow_paimon.engine.files.scan"]),
    ("import importlib\nimportlib.import_module('airflow_paimon.spark')\n", ["airflow_paimon.spark"]),
])
def test_imports_sees_every_kind_of_import(tmp_path, monkeypatch, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(source)
    monkeypatch.setitem(MODULES, "probe", path)
    assert [name for name, _ in imports("probe")] == expected


# The Airflow side's one way into spark/ (docs/internals.md, "Layers"): the backends and the table of jobs.
SPARK_ENTRY = "airflow_paimon.spark.backends"


def spark_imports_past_the_entry(edges) -> list[str]:
    """Imports of spark/ by a module of the Airflow side (floor "") that go elsewhere than SPARK_ENTRY."""
    return [f"{module} (line {line}) imports {target}: the Airflow side reaches spark/ through {SPARK_ENTRY} only"
            for module, target, line in edges
            if package_of(module) == "" and package_of(target) == "spark" and target != SPARK_ENTRY]


def test_the_airflow_side_reaches_spark_only_through_its_entry():
    assert SPARK_ENTRY in MODULES
    assert any(package_of(module) == "" and target == SPARK_ENTRY for module, target, _ in EDGES)
    found = spark_imports_past_the_entry(EDGES)
    assert not found, "the Airflow side imports spark/ past its entry:\n" + "\n".join(found)


def test_an_import_of_spark_past_its_entry_is_found(tmp_path, monkeypatch):
    path = tmp_path / "probe.py"
    path.write_text("from airflow_paimon.spark.backends import JOBS\n"
                    "def run():\n    from airflow_paimon.spark.job_frame import execute_job\n"
                    "import airflow_paimon.spark\n")
    monkeypatch.setitem(MODULES, "airflow_paimon.operators.probe", path)
    probe = "airflow_paimon.operators.probe"
    edges = sorted((probe, target, line) for target, line in imports(probe))
    assert [(target, line) for _, target, line in edges] == [
        ("airflow_paimon.spark", 4), (SPARK_ENTRY, 1), ("airflow_paimon.spark.job_frame", 3)]
    found = spark_imports_past_the_entry(edges)
    assert len(found) == 2 and "(line 4) imports airflow_paimon.spark:" in found[0]
    assert "(line 3) imports airflow_paimon.spark.job_frame:" in found[1]
    # below the Airflow side, spark/ and job_env import spark/ as their floors allow
    assert spark_imports_past_the_entry([("airflow_paimon.spark.job_runner", "airflow_paimon.spark.job_frame", 1)]) \
        == []
