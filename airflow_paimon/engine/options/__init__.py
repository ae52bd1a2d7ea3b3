"""Table options: declared once (declared.py), parsed once per table (table.py: ``TableOptions``), read by each
subsystem through its typed view (views.py). The rules between options and a table's columns are
engine/table_options.py's."""
from airflow_paimon.engine.options.declared import JAVA_INT_MAX, MAX_DYNAMIC_BUCKETS, OPTIONS, Option, markdown_table
from airflow_paimon.engine.options.table import TableOptions
from airflow_paimon.engine.options.views import (BucketOptions, CompactOptions, ExpireOptions, IndexOptions,
                                                 ManifestMergeOptions, MergeOptions)

__all__ = ["JAVA_INT_MAX", "MAX_DYNAMIC_BUCKETS", "OPTIONS", "Option", "markdown_table", "TableOptions",
           "BucketOptions", "CompactOptions", "ExpireOptions", "IndexOptions", "ManifestMergeOptions", "MergeOptions"]
