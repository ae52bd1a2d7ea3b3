"""A table's snapshot and schema files read as the JSON they are, without pypaimon: what Airflow's side needs of
a table's metadata (the sensor's and trigger's snapshot polls, the commit's asset event, the lineage schema).
Duck-types the few members of a pypaimon table those readers use (``snapshot_manager()``'s
``get_latest_snapshot`` / ``get_snapshot_by_id``, ``fields``, ``identifier.get_full_name()``), so
engine/snapshot/snapshots.py and assets.py read either. A filesystem catalog's layout:
``<warehouse>/<db>.db/<table>``."""
from __future__ import annotations

import json
from dataclasses import dataclass

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.identifier import validate_identifier

PREFIX = "snapshot-"


class TableNotFound(LookupError):
    """The table has no schema file (yet)."""

    retryable: bool = True  # it may be created meanwhile (a sensor or asset event ahead of the first write)


@dataclass(frozen=True)
class SnapshotFile:
    id: int
    commit_kind: str
    commit_user: str
    commit_identifier: int
    time_millis: int
    delta_record_count: int | None
    total_record_count: int | None
    changelog_record_count: int | None
    changelog_manifest_list: str | None
    properties: dict[str, str] | None = None

    @classmethod
    def parse(cls, data: bytes) -> SnapshotFile:
        j = json.loads(data)
        return cls(j["id"], j["commitKind"], j["commitUser"], j["commitIdentifier"], j["timeMillis"],
                   j.get("deltaRecordCount"), j.get("totalRecordCount"), j.get("changelogRecordCount"),
                   j.get("changelogManifestList"), j.get("properties"))


@dataclass(frozen=True)
class Field:
    name: str
    type: str


class _Identifier(str):
    def get_full_name(self) -> str:
        return str(self)


class TableFiles:
    def __init__(self, catalog_options: dict, identifier: str):
        warehouse = catalog_options.get("warehouse")
        if not warehouse:
            raise ConfigError(f"table {identifier}: the catalog options name no warehouse")
        database, name = validate_identifier(identifier).split(".", 1)
        storage.configure(catalog_options)  # an object store's endpoint and keys
        self.identifier = _Identifier(identifier)
        self.path = storage.join(warehouse, f"{database}.db", name)
        self.snapshot_dir = storage.join(self.path, "snapshot")
        if not storage.exists(storage.join(self.path, "schema")):  # as pypaimon's get_table: no schema, no table
            raise TableNotFound(f"Table {identifier} does not exist (no schema under {self.path})")

    def snapshot_manager(self) -> TableFiles:
        return self

    def _snapshot_path(self, snapshot_id: int) -> str:
        return storage.join(self.snapshot_dir, f"{PREFIX}{snapshot_id}")

    def latest_snapshot_id(self) -> int | None:
        """As Paimon's findLatest: the LATEST hint when no snapshot follows it, else the highest listed."""
        hint_path = storage.join(self.snapshot_dir, "LATEST")
        try:
            hint = int(storage.read_bytes(hint_path).decode().strip())
        except (OSError, ValueError):
            hint = None  # missing or torn: list
        if hint is not None and storage.exists(self._snapshot_path(hint)) and \
                not storage.exists(self._snapshot_path(hint + 1)):
            return hint
        ids = [int(n[len(PREFIX):]) for n in storage.list_dir(self.snapshot_dir)
               if n.startswith(PREFIX) and n[len(PREFIX):].isdigit()]
        return max(ids) if ids else None

    def get_snapshot_by_id(self, snapshot_id: int) -> SnapshotFile | None:
        try:
            return SnapshotFile.parse(storage.read_bytes(self._snapshot_path(snapshot_id)))
        except FileNotFoundError:
            return None  # expired

    def get_latest_snapshot(self) -> SnapshotFile | None:
        latest = self.latest_snapshot_id()
        return None if latest is None else self.get_snapshot_by_id(latest)

    @property
    def fields(self) -> list[Field]:
        """The columns of the table's latest schema."""
        schema_dir = storage.join(self.path, "schema")
        ids = [int(n[len("schema-"):]) for n in storage.list_dir(schema_dir) if n[len("schema-"):].isdigit()]
        if not ids:
            raise FileNotFoundError(f"table {self.identifier}: no schema under {schema_dir}")
        schema = json.loads(storage.read_bytes(storage.join(schema_dir, f"schema-{max(ids)}")))
        return [Field(f["name"], f["type"] if isinstance(f["type"], str) else json.dumps(f["type"]))
                for f in schema["fields"]]
