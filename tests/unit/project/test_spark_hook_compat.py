"""The Spark provider seam (airflow_paimon/spark/spark_hook_compat.py) against the installed
apache-airflow-providers-apache-spark: every private member the operators use exists on a real SparkSubmitHook and
is what they rely on, and no private member of the provider is named outside the seam. A provider upgrade that
renames or reshapes one fails here, naming the member and where the operators use it."""
from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import json
import textwrap
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_paimon.spark.spark_hook_compat import REQUIRED, SUBMIT_PROCESS, submit_process

ROOT = Path(__file__).resolve().parents[3]
SEAM = "airflow_paimon/spark/spark_hook_compat.py"
VERSION = importlib.metadata.version("apache-airflow-providers-apache-spark")


@pytest.fixture
def hook(monkeypatch):
    """A real SparkSubmitHook on a local master (nothing submitted)."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_COMPAT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    return SparkSubmitHook(conn_id="spark_compat")


def _where(owner: str, name: str, used_by: str) -> str:
    return f"apache-airflow-providers-apache-spark {VERSION}: {owner}.{name} (operators' use: {used_by})"


@pytest.mark.parametrize("entry", REQUIRED, ids=lambda e: f"{e[0].split(':')[1]}.{e[1]}")
def test_required_member_exists(entry, hook):
    owner, name, used_by = entry
    module, cls = owner.split(":")
    assert getattr(importlib.import_module(module), cls) is SparkSubmitHook, f"{owner}: only SparkSubmitHook is checked"
    assert hasattr(hook, name), f"{_where(*entry)} is gone; adapt {SEAM}"


def test_submit_keeps_the_process_it_starts_with_our_arguments(hook):
    """submit() stores the subprocess.Popen it starts in SUBMIT_PROCESS (None before), passing its keyword
    arguments on to Popen: SparkSubmitBackend gives it env= and start_new_session=True, and kill() signals that
    process's group."""
    where = _where(*REQUIRED[0])
    assert submit_process(hook) is None, f"{where}: not None before submit()"
    assert "kwargs" in inspect.signature(SparkSubmitHook.submit).parameters, \
        f"{where}: SparkSubmitHook.submit no longer takes Popen's keyword arguments (env, start_new_session)"
    source = ast.parse(textwrap.dedent(inspect.getsource(SparkSubmitHook.submit)))
    stored = [node.value for node in ast.walk(source) if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Attribute) and target.attr == SUBMIT_PROCESS]
    popens = [call for call in stored if isinstance(call, ast.Call) and ast.unparse(call.func) == "subprocess.Popen"]
    assert popens, f"{where}: SparkSubmitHook.submit no longer stores its subprocess.Popen there; adapt {SEAM}"
    assert any(k.arg is None and ast.unparse(k.value) == "kwargs" for k in popens[0].keywords), \
        f"{where}: SparkSubmitHook.submit no longer passes its keyword arguments to Popen"


def _provider_privates(hook) -> set[str]:
    names = set(vars(hook)) | set(dir(SparkSubmitHook))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_provider_privates_only_through_the_seam(hook):
    """No module but the seam names a private member of SparkSubmitHook, as an attribute of another object or as
    a string (``getattr(hook, "_submit_sp")``)."""
    privates = _provider_privates(hook)
    stray = []
    for path in sorted((ROOT / "airflow_paimon").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == SEAM:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in privates and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                stray.append(f"{rel}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.Constant) and node.value in privates:
                stray.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not stray, f"SparkSubmitHook private members named outside {SEAM}: {stray}"
