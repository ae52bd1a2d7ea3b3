"""A table's files and where they live: warehouse storage (storage.py), the provider's own locations beside
Paimon's files (layout.py), planning a snapshot's live data files (scan.py), reading data files (data_files.py)
and the deletion-vector index files (deletion_vectors.py)."""
