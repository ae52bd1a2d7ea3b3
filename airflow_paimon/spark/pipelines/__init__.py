"""One assign-and-write pipeline per bucket mode; spark/assign_write.py picks one, engine/write/run.py stages
what it wrote.
Each takes the validated source DataFrame and the WriteContext and returns a DataFrame of WRITTEN rows
(one encoded CommitMessage and its counters per row)."""
from __future__ import annotations

from airflow_paimon.engine.bucket_mode import BucketMode
from airflow_paimon.spark.pipelines import append, cross_partition, dynamic, fixed

PIPELINES = {BucketMode.CROSS_PARTITION: cross_partition.pipeline, BucketMode.HASH_DYNAMIC: dynamic.pipeline,
             BucketMode.HASH_FIXED: fixed.pipeline, BucketMode.APPEND: append.pipeline}
