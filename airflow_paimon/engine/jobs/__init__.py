"""The jobs' specs and results, what an operator hands a job and what it hands back (specs.py), and the one line a
task logs from a result (progress.py)."""
