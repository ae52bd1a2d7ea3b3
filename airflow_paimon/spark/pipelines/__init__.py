"""One assign-and-write pipeline per table shape (engine/assign/shapes.py), keyed by the shape's name;
spark/assign_write.py picks one, engine/runs/assign_and_write.py stages what it wrote.
Each takes the validated source DataFrame and the WriteContext and returns a DataFrame of WRITTEN rows
(one encoded CommitMessage and its counters per row)."""
from __future__ import annotations

from airflow_paimon.engine.assign.shapes import APPEND, CROSS_PARTITION, HASH_DYNAMIC, HASH_FIXED
from airflow_paimon.spark.pipelines import append, cross_partition, dynamic, fixed

PIPELINES = {CROSS_PARTITION.name: cross_partition.pipeline, HASH_DYNAMIC.name: dynamic.pipeline,
             HASH_FIXED.name: fixed.pipeline, APPEND.name: append.pipeline}
