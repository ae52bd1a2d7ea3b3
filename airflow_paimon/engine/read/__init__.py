"""Reading a table's changes between two snapshots, as Paimon's ``incremental-between``: the diff
(incremental.py) and the changelog (changelog_read.py)."""
