"""Every location the provider writes or deletes beside Paimon's own files, built in one place.

    {warehouse}/.airflow-paimon/index/{database}.{table}/snapshot-{S}/manifest.json
                                                        snapshot-{S}/shard-{i:05d}-{type}[-{writer}].sst
    {warehouse}/.airflow-paimon/staging/{database}.{table}/{commit_user}/staged.json (and planned-columns.json)
                                                                      /index/shard-{i:05d}.json (and -{type}.sst)
    {warehouse}/.airflow-paimon/results/{dag}/{run}/{task}-{map}-try{n}.json (a rollback: {task}-{map}-rollback.json)

(each root may be set elsewhere on the connection). One location lies inside the table's own directory, so that
it lives exactly as long as the table (engine/commit/record.py):

    {table}/airflow-paimon/commits/{commit_user}-{commit_identifier}.json

Paimon never reads it, and no orphan clean deletes it: Paimon's looks only in ``manifest``, ``index``,
``statistics`` and the data directories (``k=v`` partitions, ``bucket-N``), ours leaves it out.

A path is a root plus segments, and a segment is an allow-list of characters: no separator, no ``.``/``..``,
no ``%`` (pyarrow percent-decodes ``file://`` URIs), no ``#`` / ``?`` (a URI parser cuts there), no whitespace or
control character. ``under`` joins them and then
proves the result lies inside the root in the form the file system acts on (storage.resolved), for plain
paths, ``file://`` and object-store URIs alike — a name that slips past the allow-list still cannot aim a
write or a clean-up elsewhere.
"""
from __future__ import annotations

import hashlib
import re

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import InternalError, PaimonJobError, ValidationError, shown
from airflow_paimon.engine.identifier import validate_identifier

PROVIDER_DIR = ".airflow-paimon"  # under the warehouse, beside the databases: no table directory holds it
ROOTS = ("index", "staging", "results")
# in the table's directory: neither a partition (no '=') nor a bucket (no 'bucket-') nor Paimon metadata
COMMIT_RECORDS = ("airflow-paimon", "commits")
STAGED_FILE = "staged.json"
PLANNED_COLUMNS_FILE = "planned-columns.json"
INDEX_MANIFEST = "manifest.json"
STAGED_INDEX_DIR = "index"  # a run's index changes, under its staging, until its commit publishes them
_JSON = ".json"  # results and staged shard descriptions

_INDEX_SNAPSHOT_DIR = re.compile(r"^snapshot-(\d+)$")

_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=-]*$")


def default_root(warehouse: str, kind: str) -> str:
    """Where ``kind`` (index, staging, results) lives when the connection does not say."""
    if kind not in ROOTS:
        raise InternalError(f"unknown root {kind!r}; one of {ROOTS}")
    return storage.join(warehouse, PROVIDER_DIR, kind)


class UnsafePathError(ValidationError):
    """A path segment outside the allow-list: refused before any file is touched, and never retried."""

    retryable: bool = False  # the same names give the same segment

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


def commit_records_dir(table_path: str) -> str:
    """Where a table's commit records live: inside the table's directory (engine/commit/record.py)."""
    return under(table_path, *COMMIT_RECORDS)


def commit_record_file(table_path: str, commit_user: str, commit_identifier: int) -> str:
    """The record of one commit identity's commit."""
    return under(table_path, *COMMIT_RECORDS, f"{commit_user}-{int(commit_identifier)}{_JSON}")


def commit_intent_file(table_path: str, commit_user: str, commit_identifier: int) -> str:
    """The intent of one commit identity to commit, written before its commit (engine/commit/record.py)."""
    return under(table_path, *COMMIT_RECORDS, f"{commit_user}-{int(commit_identifier)}.intent")


def is_commit_record(name: str) -> bool:
    """Whether a file in the commit records directory is a record (not a temporary file of one being written)."""
    return name.endswith(_JSON)


def staged_file(run_staging: str) -> str:
    return storage.join(run_staging, STAGED_FILE)


def planned_columns_file(run_staging: str) -> str:
    return storage.join(run_staging, PLANNED_COLUMNS_FILE)


def index_snapshot_dir(snapshot_id: int | None) -> str:
    """The directory of the index of ``snapshot_id`` (0: the empty table), relative to the table's index."""
    return f"snapshot-{snapshot_id or 0}"


def indexed_snapshot(name: str) -> int | None:
    """The snapshot id of an index directory named by index_snapshot_dir; None for any other name."""
    m = _INDEX_SNAPSHOT_DIR.match(name)
    return int(m.group(1)) if m else None


def index_manifest(index_uri: str, snapshot_id: int | None) -> str:
    """The manifest of the index of ``snapshot_id``, written last: an index directory without one is not read."""
    return storage.join(index_uri, index_snapshot_dir(snapshot_id), INDEX_MANIFEST)


def index_file(snapshot_dir: str, name: str) -> str:
    """A file of the index as its manifest names it: relative to the table's index, inside a snapshot's directory."""
    return f"{snapshot_dir}/{name}"


def index_file_dir(relative: str) -> str:
    """The snapshot directory an index_file lies in."""
    return relative.split("/", 1)[0]


def shard_file_name(shard: int, file_type: str, writer: str | None = None) -> str:
    """A shard file's name; a ``writer`` keeps the files of two publishers of one snapshot apart."""
    return f"{_shard(shard)}-{file_type}{'-' + writer if writer else ''}.sst"


def _shard(shard: int) -> str:
    return f"shard-{shard:05d}"


def is_shard_file(name: str) -> bool:
    """Whether a file in an index directory is a shard file (an SST), not its manifest."""
    return name.endswith(".sst")


def staged_index_dir(run_staging: str) -> str:
    """Where a run stages its index changes for the commit to publish."""
    return storage.join(run_staging, STAGED_INDEX_DIR)


def staged_shard_file(run_staging: str, shard: int, file_type: str) -> str:
    """A shard's staged SST of changes."""
    return storage.join(staged_index_dir(run_staging), shard_file_name(shard, file_type))


def staged_shard_meta(run_staging: str, shard: int) -> str:
    """A shard's staged description of its changes (counts, file type, its staged SST)."""
    return storage.join(staged_index_dir(run_staging), _shard(shard) + _JSON)


def is_staged_shard_meta(name: str) -> bool:
    """Whether a file in the staged index directory is a shard's description (staged_shard_meta)."""
    return name.endswith(_JSON)


def safe_segment(name: str) -> str:
    """A segment from a free-form name (dag id, run id, task id): unsafe characters become ``_``, and a name
    that had to change gets a short digest of the original, so two names never share a segment."""
    cleaned = re.sub(r"[^A-Za-z0-9_.=-]", "_", name).replace("..", "__")
    if not _SEGMENT.match(cleaned):
        cleaned = "_" + cleaned  # a leading '.', '=' or '-', or nothing at all
    return cleaned if cleaned == name else f"{cleaned}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def result_file(results_root: str, dag_id: str, run_id: str, task_id: str, map_index: int, try_number: int) -> str:
    """Where a task's Spark job writes its result: {results_root}/{dag}/{run}/{task}-{map}-try{n}.json."""
    return _dag_run_file(results_root, dag_id, run_id, f"{task_id}-{map_index}-try{try_number}")


def rollback_marker(results_root: str, dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
    """Where a rollback task records that it ran: {results_root}/{dag}/{run}/{task}-{map}-rollback.json."""
    return _dag_run_file(results_root, dag_id, run_id, f"{task_id}-{map_index}-rollback")


def _dag_run_file(results_root: str, dag_id: str, run_id: str, name: str) -> str:
    return under(results_root, safe_segment(dag_id), safe_segment(run_id), safe_segment(name) + _JSON)


def dag_results_dir(result_uri: str) -> str:
    """The directory of a DAG's results ({results_root}/{dag}), from the path of one of its result_file."""
    return result_uri.rstrip("/").rsplit("/", 2)[0]


def is_result_file(name: str) -> bool:
    """Whether a file in a DAG run's results directory is a result (result_file, rollback_marker)."""
    return name.endswith(_JSON)
