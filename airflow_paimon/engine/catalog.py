"""Opening Paimon's catalog: the one place that also points the provider's own files (index, staging,
results) at the catalog's store and credentials."""
from __future__ import annotations

from pypaimon import CatalogFactory

from airflow_paimon.engine import storage


def open_catalog(catalog_options: dict):
    storage.configure(catalog_options)  # index, staging and result files: the same store, same credentials
    return CatalogFactory.create(dict(catalog_options))
