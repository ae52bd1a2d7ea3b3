"""Every location the provider writes or deletes outside a table's own directory, built in one place.

    {warehouse}/.airflow-paimon/index/{database}.{table}/snapshot-{S}/...       (engine/index/layout.py)
    {warehouse}/.airflow-paimon/staging/{database}.{table}/{commit_user}/staged.json (and planned-columns.json)
    {warehouse}/.airflow-paimon/results/{dag}/{run}/{task}-{map}-try{n}.json

(each root may be set elsewhere on the connection). A path is a root plus segments, and a segment is an
allow-list of characters: no separator, no ``.``/``..``, no ``%`` (pyarrow percent-decodes ``file://`` URIs),
no ``#`` / ``?`` (a URI parser cuts there), no whitespace or control character. ``under`` joins them and then
proves the result lies inside the root in the form the file system acts on (storage.resolved), for plain
paths, ``file://`` and object-store URIs alike — a name that slips past the allow-list still cannot aim a
write or a clean-up elsewhere.
"""
from __future__ import annotations

import hashlib
import re

from airflow_paimon.engine import storage
from airflow_paimon.engine.errors import PaimonJobError, ValidationError, shown
from airflow_paimon.engine.identifier import validate_identifier

PROVIDER_DIR = ".airflow-paimon"  # under the warehouse, beside the databases: no table directory holds it
ROOTS = ("index", "staging", "results")
STAGED_FILE = "staged.json"
PLANNED_COLUMNS_FILE = "planned-columns.json"

_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=-]*$")


def default_root(warehouse: str, kind: str) -> str:
    """Where ``kind`` (index, staging, results) lives when the connection does not say."""
    if kind not in ROOTS:
        raise ValueError(f"unknown root {kind!r}; one of {ROOTS}")
    return storage.join(warehouse, PROVIDER_DIR, kind)


class UnsafePathError(ValidationError):
    """A path segment outside the allow-list: refused before any file is touched, and never retried."""

    def __init__(self, segment):
        PaimonJobError.__init__(self, f"path segment {shown(segment)} is not a safe path segment "
                                      "(ASCII letters, digits, '_', '-', '.', '=')")


def check_segment(segment: str) -> str:
    """``segment`` unchanged if it is one safe path segment; else UnsafePathError naming it."""
    if not isinstance(segment, str) or not _SEGMENT.match(segment) or ".." in segment:
        raise UnsafePathError(segment)
    return segment


def under(root: str, *segments: str) -> str:
    """``root`` joined with ``segments`` (each checked), proven to resolve strictly inside ``root``."""
    uri = storage.join(root, *(check_segment(s) for s in segments))
    storage.require_within(root, uri)
    return uri


def table_dir(root: str, table: str) -> str:
    """A table's directory under one of the provider's roots."""
    return under(root, validate_identifier(table))


def index_dir(index_root: str, table: str) -> str:
    """Where the table's global key index lives (one directory per indexed snapshot inside)."""
    return table_dir(index_root, table)


def staging_dir(staging_root: str, table: str, commit_user: str | None = None) -> str:
    """Where the table's runs stage their commits; with ``commit_user``, where that run stages."""
    return table_dir(staging_root, table) if commit_user is None else under(table_dir(staging_root, table),
                                                                             commit_user)


def staged_file(run_staging: str) -> str:
    return storage.join(run_staging, STAGED_FILE)


def planned_columns_file(run_staging: str) -> str:
    return storage.join(run_staging, PLANNED_COLUMNS_FILE)


def safe_segment(name: str) -> str:
    """A segment from a free-form name (dag id, run id, task id): unsafe characters become ``_``, and a name
    that had to change gets a short digest of the original, so two names never share a segment."""
    cleaned = re.sub(r"[^A-Za-z0-9_.=-]", "_", name).replace("..", "__")
    if not _SEGMENT.match(cleaned):
        cleaned = "_" + cleaned  # a leading '.', '=' or '-', or nothing at all
    return cleaned if cleaned == name else f"{cleaned}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def result_file(results_root: str, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> str:
    """Where a task's Spark job writes its result: {results_root}/{dag}/{run}/{task}-{map}-try{n}.json."""
    return under(results_root, safe_segment(dag_id), safe_segment(run_id),
                 safe_segment(f"{task_id}-{map_index}-try{try_number}") + ".json")
