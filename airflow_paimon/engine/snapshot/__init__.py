"""A table's history: its snapshots, newest first, and a run's base as a snapshot rather than an id (history.py);
finding a snapshot newer than a cursor (snapshots.py)."""
