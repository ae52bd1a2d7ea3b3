"""OpenLineage for the Paimon operators: which datasets a task read and wrote, and the Spark conf that ties
the Spark job's own OpenLineage events to the Airflow task.

The dataset identities are computed here without OpenLineage (plain ``DatasetRef``), so they are the same
with or without the provider and testable anywhere; OpenLineage's classes are imported only when a lineage
object is built, and ``operator_lineage`` returns None when the openlineage provider is not installed.

Naming (OpenLineage's dataset naming conventions): a Paimon table is namespace = its warehouse URI (a local
path as ``file://<path>``), name = ``database.table`` — the same dataset the ``paimon://`` asset converts to
(airflow_paimon/assets.py). A source file is namespace = ``scheme://authority`` (``file`` for a local
path), name = its path (an object key without the leading ``/``, as for s3 / gs); a Spark table source is
namespace ``spark``, name the table. A ``{"query": ...}`` source names no dataset (its tables are in SQL).
"""
from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

    from airflow_paimon.table_files import TableFiles

# Object stores whose OpenLineage names are the key without a leading "/".
_KEY_NAMED = {"s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos"}


@dataclass(frozen=True)
class DatasetRef:
    namespace: str
    name: str
    fields: tuple[tuple[str, str], ...] = ()  # (column, type) for the schema facet; empty: no facet


def dataset_namespace(warehouse: str) -> str:
    """A warehouse as an OpenLineage namespace: its URI without a trailing ``/``; a local path as file://."""
    if not urllib.parse.urlsplit(warehouse).scheme:
        return "file://" + os.path.abspath(warehouse)
    return warehouse.rstrip("/")


def table_dataset(warehouse: str, identifier: str, table: TableFiles | FileStoreTable | None = None) -> DatasetRef:
    """The Paimon table; with ``table`` (table_files.py, or a pypaimon table), its columns and Paimon types as
    the schema."""
    fields = tuple((f.name, str(f.type)) for f in table.fields) if table is not None else ()
    return DatasetRef(dataset_namespace(warehouse), identifier, fields)


def source_dataset(source: str | dict) -> DatasetRef | None:
    """The dataset assign-and-write reads: a path / URI, or ``{"path"}`` / ``{"table"}``; None for a query."""
    if isinstance(source, dict):
        if source.get("table"):
            return DatasetRef("spark", str(source["table"]))
        if not source.get("path"):
            return None
        source = str(source["path"])
    parsed = urllib.parse.urlsplit(source)
    if not parsed.scheme or parsed.scheme == "file" or len(parsed.scheme) == 1:  # "C:\..." is a local path
        path = parsed.path if parsed.scheme == "file" else source
        return DatasetRef("file", os.path.abspath(path))
    name = parsed.path.lstrip("/") if parsed.scheme in _KEY_NAMED else parsed.path
    return DatasetRef(f"{parsed.scheme}://{parsed.netloc}", name)


def operator_lineage(inputs: list[DatasetRef], outputs: list[DatasetRef]):
    """An OperatorLineage of these datasets (with schema facets), or None without the openlineage provider."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
    except ImportError:
        return None
    from airflow.providers.common.compat.openlineage.facet import (Dataset, SchemaDatasetFacet,
                                                                   SchemaDatasetFacetFields)

    def dataset(ref: DatasetRef):
        facets: dict = {"schema": SchemaDatasetFacet(fields=[SchemaDatasetFacetFields(name=n, type=t)
                                                       for n, t in ref.fields])} if ref.fields else {}
        return Dataset(namespace=ref.namespace, name=ref.name, facets=facets)

    return OperatorLineage(inputs=[dataset(r) for r in inputs], outputs=[dataset(r) for r in outputs])


class TableLineageMixin:
    """``get_openlineage_facets_on_complete`` for an operator writing ``self.table``: the table (with its
    schema) as output, ``lineage_inputs()`` as inputs."""

    table: str  # the operator's, as is its connection
    paimon_conn_id: str


    def lineage_inputs(self) -> list[DatasetRef]:
        return []

    def lineage_datasets(self) -> tuple[list[DatasetRef], list[DatasetRef]]:
        from airflow_paimon.hooks.paimon import PaimonHook

        hook = PaimonHook(self.paimon_conn_id)
        return self.lineage_inputs(), [table_dataset(hook.warehouse, self.table, hook.table_files(self.table))]

    def get_openlineage_facets_on_complete(self, task_instance):
        return operator_lineage(*self.lineage_datasets())


def spark_openlineage_conf(conf: dict[str, Any], context, parent_job_info: bool | None,
                           transport_info: bool | None) -> dict[str, Any]:
    """``conf`` plus what the openlineage provider injects into a Spark job's properties, as the Spark
    provider's SparkSubmitOperator does (our operators call SparkSubmitHook directly, so they do it here):
    the parent job (this task) and/or the transport, when asked by the operator's flag or, when that is None,
    by ``[openlineage] spark_inject_parent_job_info`` / ``spark_inject_transport_info``. Properties already
    in ``conf`` (e.g. set in ``spark_conf``) are kept by the provider's helpers."""
    from airflow.providers.common.compat.sdk import conf as airflow_conf

    if parent_job_info is None:
        parent_job_info = airflow_conf.getboolean("openlineage", "spark_inject_parent_job_info", fallback=False)
    if transport_info is None:
        transport_info = airflow_conf.getboolean("openlineage", "spark_inject_transport_info", fallback=False)
    if not (parent_job_info or transport_info):
        return conf
    from airflow.providers.common.compat.openlineage.utils.spark import (
        inject_parent_job_information_into_spark_properties, inject_transport_information_into_spark_properties)

    if parent_job_info:
        conf = inject_parent_job_information_into_spark_properties(conf, context)
    if transport_info:
        conf = inject_transport_information_into_spark_properties(conf, context)
    return conf
