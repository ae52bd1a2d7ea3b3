"""What the page shows of one table, read with pypaimon and the index manifest only (no Spark, no writes). The job
side's: the app (ui/app.py) calls it through the steps of ui/steps.py."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.commit.staging import read_staged, runs
from airflow_paimon.engine.compact.levels import level_sorted_runs
from airflow_paimon.engine.snapshot.history import newest_first
from airflow_paimon.engine.options import CompactOptions, TableOptions
from airflow_paimon.engine.index.layout import published_snapshots, read_manifest
from airflow_paimon.engine.files.scan import latest_snapshot, live_entries
from airflow_paimon.engine.assign.shapes import shape_of
from airflow_paimon.engine.table.catalog import open_catalog

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

MAX_SNAPSHOTS = 30  # newest first; older ones are one click away in Paimon's own tools
MAX_INDEXES = 10
MAX_BUCKETS = 40  # the most indebted buckets
MAX_SCHEMAS = 20
MAX_TAGS = 30


@dataclass
class SnapshotRow:
    id: int
    commit_kind: str
    time_millis: int
    commit_user: str
    commit_identifier: int
    delta_records: int | None
    total_records: int | None
    dag_run: tuple[str, str, int] | None = None  # (dag_id, run_id, generation) that made it, when one of ours did
    properties: dict[str, str] = field(default_factory=dict)  # Paimon's snapshot properties (engine/commit/ordering.py)


@dataclass
class BucketRow:
    partition: tuple
    bucket: int
    files: int
    sorted_runs: int
    records: int
    size: int


@dataclass
class IndexRow:
    snapshot_id: int
    origin: str
    shards: int
    keys: int
    files: int
    size: int
    schema_id: int
    key_hash_scheme: str


@dataclass
class StagedRow:
    commit_user: str
    commit_identifier: int | None
    base_snapshot_id: int | None
    messages: int
    dag_run: tuple[str, str, int] | None = None


@dataclass
class SchemaRow:
    id: int
    time_millis: int
    changes: list[str]  # against the schema before it; the first one: "created"


@dataclass
class TagRow:
    name: str
    snapshot_id: int
    time_millis: int  # the tagged snapshot's


@dataclass
class TableView:
    conn_id: str
    identifier: str
    columns: list[tuple[str, str]]
    primary_keys: list[str]
    partition_keys: list[str]
    bucket_mode: str
    merge_engine: str
    options: dict[str, str]
    snapshots: list[SnapshotRow] = field(default_factory=list)
    buckets: list[BucketRow] = field(default_factory=list)
    bucket_count: int = 0
    file_count: int = 0
    compaction_trigger: int = CompactOptions.num_sorted_run_compaction_trigger  # the declared default
    indexes: list[IndexRow] = field(default_factory=list)
    staged: list[StagedRow] = field(default_factory=list)
    schemas: list[SchemaRow] = field(default_factory=list)  # newest first
    tags: list[TagRow] = field(default_factory=list)
    indebted: int = 0  # buckets at or past the trigger: the next compaction rewrites them

    @property
    def latest(self) -> SnapshotRow | None:
        return self.snapshots[0] if self.snapshots else None


def list_tables(catalog_options: dict) -> list[str]:
    catalog = open_catalog(catalog_options)
    return sorted(f"{db}.{t}" for db in catalog.list_databases() for t in catalog.list_tables(db))


def table_summary(hook, identifier: str) -> dict:
    """One line of the overview: bucket mode and the latest snapshot."""
    table = open_catalog(hook.catalog_options()).get_table(identifier)
    snap = latest_snapshot(table)
    return {"identifier": identifier, "bucket_mode": shape_of(table).name,
            "snapshot_id": snap.id if snap else None, "records": snap.total_record_count if snap else 0,
            "commit_kind": snap.commit_kind if snap else None}


def table_view(hook, conn_id: str, identifier: str, runs_by_commit_user: dict) -> TableView:
    """``identifier`` must be one ``list_tables`` returned (the caller checks): every path below derives from it."""
    table = open_catalog(hook.catalog_options()).get_table(identifier)
    schema = table.table_schema
    options = {str(k): str(v) for k, v in dict(schema.options).items()}
    parsed = TableOptions.parse(identifier, options)
    view = TableView(conn_id, identifier, [(f.name, str(f.type)) for f in schema.fields],
                     list(schema.primary_keys), list(schema.partition_keys), shape_of(table).name,
                     parsed.merge_engine, options,
                     compaction_trigger=parsed.compaction.num_sorted_run_compaction_trigger)
    latest = latest_snapshot(table)
    view.snapshots = _snapshots(table, latest, runs_by_commit_user)
    _buckets(view, table, latest)
    view.indexes = _indexes(layout.index_dir(hook.index_root(), identifier))
    view.schemas, view.tags = schema_versions(table), tags(table)
    committed = {s.commit_user for s in view.snapshots}
    view.staged = [s for s in _staged(layout.staging_dir(hook.staging_root(), identifier), runs_by_commit_user)
                   if s.commit_user not in committed]
    return view


def _snapshots(table: FileStoreTable, latest, runs_by_commit_user) -> list[SnapshotRow]:
    if latest is None:
        return []
    return [SnapshotRow(s.id, s.commit_kind, s.time_millis, s.commit_user, s.commit_identifier,
                        s.delta_record_count, s.total_record_count, runs_by_commit_user.get(s.commit_user),
                        dict(s.properties or {}))
            for s in newest_first(table, after=max(latest.id - MAX_SNAPSHOTS, 0), latest=latest)]


def schema_versions(table: FileStoreTable) -> list[SchemaRow]:
    """Paimon's schema files, newest first, each with what changed against the one before."""
    schemas = sorted(table.schema_manager.list_all(), key=lambda s: s.id)
    rows = [SchemaRow(s.id, s.time_millis, schema_changes(prev, s))
            for prev, s in zip([None, *schemas], schemas)]
    return list(reversed(rows))[:MAX_SCHEMAS]


def schema_changes(before, after) -> list[str]:
    """Columns added / dropped / retyped and options set / reset, by field id (a rename keeps the id)."""
    if before is None:
        return ["created"]
    old, new = {f.id: f for f in before.fields}, {f.id: f for f in after.fields}
    changes = [f"added {f.name} {f.type}" for i, f in new.items() if i not in old]
    changes += [f"dropped {f.name}" for i, f in old.items() if i not in new]
    for i in new.keys() & old.keys():
        a, b = old[i], new[i]
        if a.name != b.name:
            changes.append(f"renamed {a.name} to {b.name}")
        if str(a.type) != str(b.type):
            changes.append(f"{b.name}: {a.type} to {b.type}")
    o, n = dict(before.options), dict(after.options)
    changes += [f"set {k}={v}" for k, v in sorted(n.items()) if o.get(k) != v]
    changes += [f"reset {k}" for k in sorted(o.keys() - n.keys())]
    return changes or ["no column or option change"]


def tags(table: FileStoreTable) -> list[TagRow]:
    """Paimon's tags, the newest snapshot first."""
    manager, rows = table.tag_manager(), []
    for name in manager.list_tags():
        tag = manager.get(name)
        if tag is not None:
            rows.append(TagRow(name, tag.id, tag.time_millis))
    rows.sort(key=lambda t: (-t.snapshot_id, t.name))
    return rows[:MAX_TAGS]


def _buckets(view: TableView, table: FileStoreTable, latest) -> None:
    """Files and sorted runs per (partition, bucket) at the latest snapshot; the most runs first."""
    groups = defaultdict(list)
    for e in live_entries(table, latest):
        groups[(tuple(e.partition.values), e.bucket)].append(e.file)
    rows = [BucketRow(p, b, len(files), len(level_sorted_runs(files)), sum(f.row_count for f in files),
                      sum(f.file_size for f in files)) for (p, b), files in groups.items()]
    rows.sort(key=lambda r: (-r.sorted_runs, -r.files, str(r.partition), r.bucket))
    view.bucket_count, view.file_count = len(rows), sum(r.files for r in rows)
    view.buckets = rows[:MAX_BUCKETS]
    view.indebted = sum(r.sorted_runs >= view.compaction_trigger for r in rows)


def _indexes(index_uri: str) -> list[IndexRow]:
    rows = []
    for sid in reversed(published_snapshots(index_uri)[-MAX_INDEXES:]):
        m = read_manifest(index_uri, sid)
        if m is not None:
            rows.append(IndexRow(sid, m.origin, m.shards, m.keys, len(m.files()), sum(f.size for f in m.files()),
                                 m.schema_id, m.key_hash_scheme))
    return rows


def _staged(table_staging_uri: str, runs_by_commit_user) -> list[StagedRow]:
    rows = []
    for uri in runs(table_staging_uri):
        doc = read_staged(uri)
        if doc is None:
            continue
        commit_user = doc.get("commit_user", uri.rsplit("/", 1)[-1])
        rows.append(StagedRow(commit_user, doc.get("commit_identifier"), doc.get("base_snapshot_id"),
                              len(doc.get("messages", [])), runs_by_commit_user.get(commit_user)))
    return rows
