"""The write engine: pure Python on pyarrow, pypaimon and rocksdict.

Imports neither airflow nor pyspark, so every piece is unit-testable without a cluster.
"""
