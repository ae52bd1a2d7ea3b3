"""PaimonHook: a ``paimon`` connection becomes catalog options, a table handle and the project's locations.

Imports nothing heavy at module level (DAG files import it through the operators): pypaimon, pyarrow come in
with the first method that needs them.
"""
from __future__ import annotations

import json
from typing import Any

from airflow.sdk import BaseHook

from airflow_paimon import PAIMON_CONN_FIELDS
from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.engine.identifier import validate_identifier


class PaimonHook(BaseHook):
    """Connection fields, stored in its extra (the form of provider info ``conn-fields``, PAIMON_CONN_FIELDS):
    ``warehouse`` (required; a connection may give it as host instead), ``catalog_options`` (any further
    pypaimon catalog options: a JSON object, or a string holding one), and optionally ``index_root``,
    ``staging_root`` (defaults inside the warehouse, outside every table directory). Airflow 2's prefixed
    keys (``extra__paimon__warehouse``) are read too."""

    conn_name_attr = "paimon_conn_id"
    default_conn_name = "paimon_default"
    conn_type = "paimon"
    hook_name = "Apache Paimon"

    def __init__(self, paimon_conn_id: str = default_conn_name, **kwargs) -> None:
        super().__init__(**kwargs)
        self.paimon_conn_id = paimon_conn_id
        self._extras: dict[str, Any] | None = None

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
        for name in PAIMON_CONN_FIELDS:  # Airflow 2's forms stored them prefixed
            value = extras.pop(f"extra__{self.conn_type}__{name}", None)
            if extras.get(name) in (None, "") and value not in (None, ""):
                extras[name] = value
        if not extras.get("warehouse") and conn.host:
            extras["warehouse"] = conn.host
        if not extras.get("warehouse"):
            raise ConfigError(f"connection {self.paimon_conn_id!r}: set the warehouse (host or extra 'warehouse')")
        extras["catalog_options"] = self._catalog_options_of(extras.get("catalog_options"))
        return extras

    def _catalog_options_of(self, value) -> dict[str, Any]:
        """The ``catalog_options`` field as a dict: the form may store the JSON object as text."""
        if value in (None, ""):
            return {}
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as e:
                raise ConfigError(f"connection {self.paimon_conn_id!r}: catalog_options is not JSON: {e}") from None
        if not isinstance(value, dict):
            raise ConfigError(f"connection {self.paimon_conn_id!r}: catalog_options must be a JSON object "
                              f"of option name to value, not {type(value).__name__}")
        return value

    @property
    def warehouse(self) -> str:
        return self.extras["warehouse"]

    def catalog_options(self) -> dict[str, str]:
        return {"warehouse": self.warehouse, **self.extras["catalog_options"]}

    def _root(self, name: str) -> str:
        from airflow_paimon.engine.files.layout import default_root

        return self.extras.get(f"{name}_root") or default_root(self.warehouse, name)

    def index_root(self) -> str:
        return self._root("index")

    def staging_root(self) -> str:
        return self._root("staging")

    def results_root(self) -> str:
        return self._root("results")

    def table_files(self, identifier: str):
        """The table's snapshot and schema files, read without pypaimon (airflow_paimon/table_files.py)."""
        from airflow_paimon.table_files import TableFiles

        return TableFiles(self.catalog_options(), identifier)

    def get_table(self, identifier: str, spec: dict | None = None):
        """The pypaimon table (the job side only: airflow_paimon/job_env); created from ``spec`` (a TableSpec
        dict) if it does not exist yet."""
        from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table

        validate_identifier(identifier)
        if spec is None:
            return get_table(self.catalog_options(), identifier)
        return get_or_create_table(self.catalog_options(), identifier, TableSpec.from_dict(spec))

    def endpoint(self) -> str | None:
        """The object store's endpoint the catalog options name (``fs.s3.endpoint``, ``s3.endpoint``,
        ``fs.oss.endpoint``, ...), if any."""
        options = self.extras["catalog_options"]
        return next((str(v) for k, v in sorted(options.items()) if str(k).endswith(".endpoint") and v), None)

    def timed_out(self, seconds: float, named: bool = True) -> str:
        """What a read of this connection's warehouse that was abandoned after ``seconds`` says, in words;
        ``named``: with the connection's id."""
        endpoint = self.endpoint()
        where = f"is the endpoint {endpoint} reachable?" if endpoint else "is its store reachable?"
        of = f" of connection {self.paimon_conn_id}" if named else ""
        return f"reading warehouse {self.warehouse}{of} timed out after {seconds:g} s ({where})"

    def test_connection(self) -> tuple[bool, str]:
        """Lists the warehouse's databases on the job side, within ``[paimon] connection_test_timeout`` seconds
        (default 10; a timeout is answered as one, naming the warehouse and its endpoint). A Paimon connection
        names no Spark connection: the job environment is the ``spark_default`` connection's extra ``job_python``
        (none need exist), else ``[paimon] job_python``, else this interpreter (airflow_paimon/job_env)."""
        timeout = None
        try:
            from airflow_paimon.job_env import DEFAULT_SPARK_CONN_ID, config_seconds, resolve_job_env, steps
            from airflow_paimon.job_env.step import run_step
            timeout = config_seconds("connection_test_timeout")
            databases = run_step(steps.list_databases, resolve_job_env(None, DEFAULT_SPARK_CONN_ID),
                                 timeout=timeout, catalog_options=self.catalog_options())
            return True, f"warehouse {self.warehouse} reachable; databases: {databases}"
        except TimeoutError:  # the Test button tests a copy of the form under a random id: no id to name
            return False, self.timed_out(timeout or 0, named=False)
        except Exception as e:  # noqa: BLE001 - any failure is the UI's answer
            return False, str(e)
