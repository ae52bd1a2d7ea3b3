"""The pyspark seam (airflow_paimon/spark/pyspark_compat.py) against the installed pyspark: each private attribute it
reads is still set by its owner's ``__init__``, no other module names one (not even as a string), and the seam's
functions read them as the Spark glue relies on. A pyspark upgrade that drops one fails here, naming it."""
from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_paimon.spark import pyspark_compat
from airflow_paimon.spark.pyspark_compat import REQUIRED

ROOT = Path(__file__).resolve().parents[3]
SEAM = "airflow_paimon/spark/pyspark_compat.py"


@pytest.mark.parametrize("owner, name, used_by", REQUIRED, ids=[name for _, name, _ in REQUIRED])
def test_required_attribute_is_set_by_its_owner(owner, name, used_by):
    module, cls = owner.split(":")
    init = inspect.getsource(getattr(importlib.import_module(module), cls).__init__)
    assigned = {ast.unparse(target) for node in ast.walk(ast.parse(textwrap.dedent(init)))
                for target in (node.targets if isinstance(node, ast.Assign) else
                               [node.target] if isinstance(node, ast.AnnAssign) else [])}
    assert f"self.{name}" in assigned, (f"pyspark {importlib.metadata.version('pyspark')}: {owner}.__init__ no "
                                        f"longer sets {name} (used by {used_by}); adapt {SEAM}")


def test_pyspark_privates_named_only_in_the_seam():
    names = {name for _, name, _ in REQUIRED}
    stray = []
    for path in sorted((ROOT / "airflow_paimon").rglob("*.py")):
        rel, text = str(path.relative_to(ROOT)), path.read_text()
        if rel == SEAM or not any(name in text for name in names):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr in names or isinstance(node, ast.Constant) and \
                    node.value in names:
                stray.append(f"{rel}:{node.lineno}")
    assert not stray, f"pyspark private members named outside {SEAM}: {stray}"


def test_the_seam_reads_a_classic_plan_and_a_connect_clients_releases():
    stats = SimpleNamespace(sizeInBytes=lambda: 1234)  # a py4j BigInt: its str() is the number
    jdf = SimpleNamespace(queryExecution=lambda: SimpleNamespace(
        optimizedPlan=lambda: SimpleNamespace(stats=lambda: stats)))
    classic, connect = SimpleNamespace(_jdf=jdf), SimpleNamespace()
    assert pyspark_compat.has_jvm_plan(classic) and pyspark_compat.plan_size_bytes(classic) == 1234
    assert not pyspark_compat.has_jvm_plan(connect)
    future = object()
    assert pyspark_compat.pending_releases(SimpleNamespace(client=SimpleNamespace(_release_futures={future}))) == [
        future]
    assert pyspark_compat.pending_releases(SimpleNamespace(client=SimpleNamespace(_release_futures=None))) == []
    assert pyspark_compat.pending_releases(SimpleNamespace()) == []
