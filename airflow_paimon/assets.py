"""The ``paimon://`` asset URI scheme: one Airflow Asset per Paimon table, and the asset events the commit and
compaction tasks emit for the snapshots they create.

URI form: ``paimon://<paimon_conn_id>/<database>/<table>``, e.g. ``paimon://paimon_default/demo/orders``.

Why the connection id and not the warehouse: a DAG declares its assets when it is parsed (``schedule=[...]``,
``outlets=[...]``), and the DAG processor must not read connections (secrets backends, no credentials
there). The warehouse is only known from the ``paimon`` connection when a task runs; the connection id is
what the DAG author writes anyway. Airflow's own object-storage URIs name the connection the same way
(``s3://conn_id@bucket/...``); a Paimon table has no bucket of its own to put there, so the connection id is
the authority and the path is the table's identifier. Two connections pointing at one warehouse therefore
give two assets; use one connection id per warehouse. OpenLineage, which needs the physical location, gets
it from the connection at conversion time (``convert_asset_to_openlineage``).

Normal form (``sanitize_uri``, registered as the scheme's handler): lower-case scheme, connection id as
written (Airflow connection ids are case-sensitive), path ``/<database>/<table>`` with both parts a plain
Paimon identifier (engine/identifier.py), no trailing slash, no query, no fragment, no user/password/port.
Airflow drops a fragment itself before the handler runs; everything else wrong is a ValueError naming the URI.
"""
from __future__ import annotations

import logging
import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset

from airflow_paimon.engine.errors import ConfigError, ValidationError
from airflow_paimon.engine.identifier import validate_identifier

if TYPE_CHECKING:
    from urllib.parse import SplitResult

    from pypaimon.table.file_store_table import FileStoreTable

    from airflow_paimon.table_files import TableFiles

log = logging.getLogger(__name__)
SCHEME = "paimon"
DEFAULT_CONN_ID = "paimon_default"  # PaimonHook.default_conn_name; not imported: the hook pulls in pypaimon
# A connection id as a URI authority: Airflow allows more (":", "/", "#", ...) but those would not survive
# urlsplit as a host; letters, digits, "_", "-", "." cover the ids people use.
_CONN_ID = re.compile(r"[A-Za-z0-9_.\-]+")


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's URI handler for ``paimon://``: the URI in normal form, or a ValueError saying what is wrong."""
    conn_id, identifier = _parts(uri)
    return uri._replace(scheme=SCHEME, netloc=conn_id, path="/" + identifier.replace(".", "/"))


def _parts(uri: SplitResult) -> tuple[str, str]:
    """(connection id, ``database.table``) of a paimon URI; ValueError naming the URI otherwise."""
    shown = urllib.parse.urlunsplit(uri)

    def bad(problem: str) -> ValueError:
        return ValueError(f"asset URI {shown!r}: {problem}; expected paimon://<paimon_conn_id>/<database>/<table>")

    if uri.scheme.lower() != SCHEME:
        raise bad(f"scheme must be {SCHEME!r}")
    if uri.query:
        raise bad("a query is not part of a Paimon table's URI")
    if uri.fragment:
        raise bad("a fragment is not part of a Paimon table's URI")
    if "@" in uri.netloc or ":" in uri.netloc:
        raise bad("user, password or port are not part of a Paimon table's URI (the connection holds them)")
    if not _CONN_ID.fullmatch(uri.netloc):
        raise bad("the authority must be a paimon connection id (letters, digits, '_', '-', '.')")
    segments = uri.path.rstrip("/").split("/")[1:]  # path starts with "/"
    if len(segments) != 2:
        raise bad("the path must be exactly /<database>/<table>")
    if "%" in uri.path:
        raise bad("percent-encoding is not used: write the database and table names as they are")
    try:
        identifier = validate_identifier(".".join(segments))
    except ValidationError as e:
        raise bad(str(e)) from None
    return uri.netloc, identifier


def paimon_asset(table: str, paimon_conn_id: str = DEFAULT_CONN_ID, *, extra: dict | None = None) -> Asset:
    """The Asset of ``table`` (``database.table``) in the warehouse of connection ``paimon_conn_id``; also the
    scheme's factory. Name and URI are both the normal-form URI, so every way of spelling it is one asset."""
    try:
        validate_identifier(table)
    except ValidationError as e:
        raise ConfigError(f"paimon asset of connection {paimon_conn_id!r}: {e}") from None
    uri = f"{SCHEME}://{paimon_conn_id}/{table.replace('.', '/')}"
    uri = urllib.parse.urlunsplit(sanitize_uri(urllib.parse.urlsplit(uri)))
    return Asset(name=uri, uri=uri, extra=extra)


def table_of(asset_or_uri: Asset | str) -> tuple[str, str]:
    """(paimon connection id, ``database.table``) of a paimon asset or URI."""
    uri = asset_or_uri.uri if isinstance(asset_or_uri, Asset) else asset_or_uri
    return _parts(urllib.parse.urlsplit(uri))


def convert_asset_to_openlineage(asset: Asset, lineage_context: Any = None):
    """The OpenLineage dataset of a paimon asset: namespace the table's warehouse (read through the
    connection), name ``database.table`` — the same dataset the operators report (airflow_paimon/lineage.py).
    Without the connection (e.g. converted where it is not defined) the namespace is ``paimon://<conn_id>``."""
    from airflow.providers.common.compat.openlineage.facet import Dataset

    from airflow_paimon.lineage import dataset_namespace

    conn_id, identifier = table_of(asset)
    try:
        from airflow_paimon.hooks.paimon import PaimonHook

        namespace = dataset_namespace(PaimonHook(conn_id).warehouse)
    except Exception:  # noqa: BLE001 - connection not defined / not readable here: the URI still identifies the table
        namespace = f"{SCHEME}://{conn_id}"
    return Dataset(namespace=namespace, name=identifier)


def snapshot_event_extra(table: TableFiles | FileStoreTable, snapshot_id: int, base_snapshot_id: int | None) -> dict:
    """An asset event's ``extra`` for ``snapshot_id`` of ``table`` (table_files.py, or a pypaimon table): what
    the snapshot file says (commit kind, record counts), and the snapshot the task started from. A snapshot
    expired already (by a concurrent expiry, before a retry) leaves those None: the commit stands, the event
    still names it."""
    snapshot = table.snapshot_manager().get_snapshot_by_id(snapshot_id)
    if snapshot is None:
        log.warning("table %s: snapshot %s is gone (expired?); its event has no counts",
                    table.identifier.get_full_name(), snapshot_id)
    return {"snapshot_id": snapshot_id, "base_snapshot_id": base_snapshot_id,
            "commit_kind": getattr(snapshot, "commit_kind", None),
            "delta_record_count": getattr(snapshot, "delta_record_count", None),
            "total_record_count": getattr(snapshot, "total_record_count", None)}


class TableAssetMixin:
    """For an operator writing snapshots of ``self.table``: declares the table's asset as an outlet and fills
    the asset event with the new snapshot.

    A literal table is declared when the operator is built (the DAG's asset graph shows it). A templated table
    (``"{{ params.table }}"``) cannot be: the asset is unknown at parse time. Such a task emits through an
    ``AssetAlias`` the DAG author lists in ``outlets``, if any; otherwise it emits nothing.
    """

    table: str  # the operator's, as are the connection, its outlets and its log
    paimon_conn_id: str
    outlets: list
    log: Any  # a property of the operator's
    emit_asset: bool


    def declare_table_asset(self, emit_asset: bool) -> None:
        self.emit_asset = emit_asset
        if emit_asset and not _templated(self.table):
            self.outlets = [*self.outlets, paimon_asset(self.table, self.paimon_conn_id)]

    def record_snapshot(self, context, snapshot_id: int | None, base_snapshot_id: int | None,
                        new: bool) -> dict | None:
        """Attach the event for ``snapshot_id`` to this task's outlet (or its asset aliases); returns the
        event's extra, None when no event is emitted.

        With ``new`` False (nothing committed) the outlet is withdrawn instead: a task that succeeds with an
        Asset outlet always emits an event, and the success message lists the outlets as they are when
        execute returns."""
        if not self.emit_asset:
            return None
        from airflow.sdk import AssetAlias

        asset = paimon_asset(self.table, self.paimon_conn_id)
        declared = asset in self.outlets
        aliases = [o for o in self.outlets if isinstance(o, AssetAlias)]
        if not new or snapshot_id is None:
            # a new list: prepare_for_execution's copy of the operator shares the DAG's list
            self.outlets = [o for o in self.outlets if o != asset]
            self.log.info("%s: no new snapshot, no asset event", self.table)
            return None
        if not (declared or aliases):
            return None  # a templated table without an alias: nowhere to emit
        from airflow_paimon.hooks.paimon import PaimonHook

        extra = snapshot_event_extra(PaimonHook(self.paimon_conn_id).table_files(self.table), snapshot_id,
                                     base_snapshot_id)
        events = context["outlet_events"]
        if declared:
            events[asset].extra = extra
        for alias in aliases:
            events[alias].add(asset, extra=extra)
        self.log.info("asset event %s: %s", asset.uri, extra)
        return extra


def _templated(value: str) -> bool:
    return "{{" in value or "{%" in value
