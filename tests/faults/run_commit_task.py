"""One attempt of a DAG run's commit task as its own process, the way PaimonCommitOperator runs it
(local_runner.Pipeline.commit_task: the commit, and on a conflict the run's batch written again), every job in
this process on the engine alone (local_runner.from_files). The crash point is armed only when the first rewrite
starts, so the fault tests kill the task inside its rewrite (airflow_paimon/engine/faults.py).

    python tests/faults/run_commit_task.py TASK_FILE RESULT_FILE

TASK_FILE (JSON): ``pipeline`` (Pipeline's arguments), ``done`` (the run's results by job), ``source``, ``run_id``,
``crash_at``."""
from __future__ import annotations

import json
import os
import sys

from airflow_paimon.engine.faults import CRASH_AT
from local_runner import Pipeline, from_files


def main(task_file: str, result_file: str) -> None:
    with open(task_file) as f:
        task = json.load(f)
    args = task["pipeline"]
    p = Pipeline(args.pop("catalog_options"), args.pop("table"), run_job=from_files, **args)

    def arm() -> None:
        os.environ[CRASH_AT] = task["crash_at"]

    result = p.commit_task(task["done"], task["source"], task["run_id"], before_rewrite=arm)
    with open(result_file, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
