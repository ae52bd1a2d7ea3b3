"""One module per job that the engine runs: each orchestrates the floors below it (index, assign, write, commit,
compact) for one job, and is what the Spark glue and tests/local_runner.py both call."""
