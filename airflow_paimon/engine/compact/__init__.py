"""Compaction of primary-key tables: plan per (partition, bucket) on the driver, rewrite buckets in parallel,
commit one COMPACT snapshot (Paimon's MergeTreeCompactManager split into plan / execute / commit)."""
