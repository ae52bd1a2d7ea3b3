"""The ``paimon`` connections the api-server can see: the metadata DB's and the ``AIRFLOW_CONN_*`` ones."""
from __future__ import annotations

import os

from airflow_paimon.hooks.paimon import PaimonHook

_ENV_PREFIX = "AIRFLOW_CONN_"


class _LoadedHook(PaimonHook):
    """A PaimonHook over a connection already read (the api-server has no task context to fetch one)."""

    def __init__(self, conn) -> None:
        super().__init__(conn.conn_id)
        self._conn = conn

    # an instance method over BaseHook's classmethod: the connection this hook was made with, not a lookup
    def get_connection(self, conn_id):  # type: ignore[override]
        return self._conn


def paimon_hooks() -> dict[str, PaimonHook]:
    """conn_id -> hook, for every connection of type ``paimon`` (environment wins over the DB, as in Airflow)."""
    from airflow.models.connection import Connection
    from airflow.secrets.environment_variables import EnvironmentVariablesBackend
    from airflow.utils.session import create_session
    from sqlalchemy import select

    conns = {}
    with create_session() as session:
        for conn in session.scalars(select(Connection).where(Connection.conn_type == "paimon")):
            session.expunge(conn)
            conns[conn.conn_id] = conn
    env = EnvironmentVariablesBackend()
    for key in os.environ:
        if key.startswith(_ENV_PREFIX):
            conn_id = key[len(_ENV_PREFIX):].lower()
            try:
                conn = env.get_connection(conn_id)
            except Exception:  # noqa: BLE001 - a malformed variable of another connection is not this page's business
                continue
            if conn is not None and conn.conn_type == "paimon":
                conns[conn_id] = conn
    return {conn_id: _LoadedHook(conn) for conn_id, conn in sorted(conns.items())}
