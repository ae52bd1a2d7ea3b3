"""Opening Paimon's catalog: the one place that also points the provider's own files (index, staging,
results) at the catalog's store and credentials."""
from __future__ import annotations

from pypaimon import CatalogFactory

from airflow_paimon.engine import paimon_compat
from airflow_paimon.engine.files import storage


def require_warehouse(catalog_options: dict) -> None:
    """A local warehouse (a path or ``file://``) that does not exist is refused (PaimonJobError), before a catalog
    that may create it is opened: what only reads (the connection test, the UI page) must not make one. An object
    store's prefix may be empty, so it is not checked."""
    from airflow_paimon.engine.errors import TransientError

    warehouse = str(catalog_options.get("warehouse") or "")
    local = warehouse and ("://" not in warehouse or warehouse.startswith("file://"))
    if local and not storage.is_dir(warehouse):
        raise TransientError(f"warehouse {warehouse} does not exist (PaimonCreateTableOperator creates it with "
                             "the first table)")


def open_catalog(catalog_options: dict):
    storage.configure(catalog_options)  # index, staging and result files: the same store, same credentials
    paimon_compat.read_older_manifests()  # tables older Java Paimon writers wrote or compacted
    return CatalogFactory.create(dict(catalog_options))
