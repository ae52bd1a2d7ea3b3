"""The merge engines' rules (Paimon's ``merge-engine``: deduplicate, first-row, partial-update, aggregation):
which retractions a table takes, how one key's records merge in a batch, in a write and in a compaction.
Below write/ and compact/, which both merge by them."""
