"""PaimonHook: a ``paimon`` connection becomes catalog options, a table handle and the project's locations."""
from __future__ import annotations

import json
from typing import Any

from airflow.sdk import BaseHook

from airflow_paimon.engine import storage
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.table import TableSpec, get_or_create_table, get_table


class PaimonHook(BaseHook):
    """Connection extras: ``warehouse`` (required unless given as host), ``catalog_options`` (any further
    pypaimon catalog options), and optionally ``index_root``, ``staging_root`` (defaults inside the warehouse,
    outside every table directory)."""

    conn_name_attr = "paimon_conn_id"
    default_conn_name = "paimon_default"
    conn_type = "paimon"
    hook_name = "Apache Paimon"

    def __init__(self, paimon_conn_id: str = default_conn_name, **kwargs) -> None:
        super().__init__(**kwargs)
        self.paimon_conn_id = paimon_conn_id
        self._extras: dict[str, Any] | None = None

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["schema", "login", "password", "port"],
            "relabeling": {"host": "Warehouse URI"},
            "placeholders": {"host": "file:///data/warehouse or s3://bucket/warehouse",
                             "extra": json.dumps({"catalog_options": {}, "index_root": None})},
        }

    @property
    def extras(self) -> dict[str, Any]:
        if self._extras is None:
            self._extras = self._extras_of(self.get_connection(self.paimon_conn_id))
        return self._extras

    async def acatalog_options(self) -> dict[str, str]:
        """``catalog_options()`` from async code (a trigger): the connection is fetched without blocking."""
        if self._extras is None:
            self._extras = self._extras_of(await self.aget_connection(self.paimon_conn_id))
        return self.catalog_options()

    def _extras_of(self, conn) -> dict[str, Any]:
        extras = dict(conn.extra_dejson)
        if not extras.get("warehouse") and conn.host:
            extras["warehouse"] = conn.host
        if not extras.get("warehouse"):
            raise ValueError(f"connection {self.paimon_conn_id!r}: set the warehouse (host or extra 'warehouse')")
        return extras

    @property
    def warehouse(self) -> str:
        return self.extras["warehouse"]

    def catalog_options(self) -> dict[str, str]:
        return {"warehouse": self.warehouse, **self.extras.get("catalog_options", {})}

    def _root(self, name: str) -> str:
        return self.extras.get(f"{name}_root") or storage.join(self.warehouse, ".airflow-paimon", name)

    def index_root(self) -> str:
        return self._root("index")

    def staging_root(self) -> str:
        return self._root("staging")

    def results_root(self) -> str:
        return self._root("results")

    def get_table(self, identifier: str, spec: dict | None = None):
        """The pypaimon table; created from ``spec`` (a TableSpec dict) if it does not exist yet."""
        validate_identifier(identifier)
        if spec is None:
            return get_table(self.catalog_options(), identifier)
        return get_or_create_table(self.catalog_options(), identifier, TableSpec.from_dict(spec))

    def test_connection(self) -> tuple[bool, str]:
        try:
            from airflow_paimon.engine.table import open_catalog
            databases = open_catalog(self.catalog_options()).list_databases()
            return True, f"warehouse {self.warehouse} reachable; databases: {databases}"
        except Exception as e:
            return False, str(e)
