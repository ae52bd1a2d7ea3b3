"""Table options: declared once (declared.py), parsed once per table (table_options.py: ``TableOptions``, through
which every option is read), read by each subsystem through its typed view (views.py); the rules between options
and a table's columns, checked before anything is created or written, in checks.py."""
from airflow_paimon.engine.options.declared import JAVA_INT_MAX, MAX_DYNAMIC_BUCKETS, OPTIONS, Option, markdown_table
from airflow_paimon.engine.options.table_options import TableOptions
from airflow_paimon.engine.options.views import (BucketOptions, CompactOptions, ExpireOptions, IndexOptions,
                                                 ManifestMergeOptions, MergeOptions, WriteOptions)

__all__ = ["JAVA_INT_MAX", "MAX_DYNAMIC_BUCKETS", "OPTIONS", "Option", "markdown_table", "TableOptions",
           "BucketOptions", "CompactOptions", "ExpireOptions", "IndexOptions", "ManifestMergeOptions", "MergeOptions",
           "WriteOptions"]
