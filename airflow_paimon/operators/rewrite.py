"""A run's batch written again by its commit task, when the table moved under the staged write in a way only a new
write heals: other writers' commits that conflict with it (engine/commit/rebase.py), a rollback, a schema change
(engine/errors.py ``rewrite_heals``). The commit task runs the run's bootstrap-index and assign-and-write again, in
its own process, against the table as it is now, then commits that (PaimonCommitOperator ``max_rewrites``)."""
from __future__ import annotations

import copy

from airflow.sdk.exceptions import AirflowFailException


class StaleWriteError(AirflowFailException):
    """The table moved under the run's staged write in a way only writing the batch again heals; without a rewrite
    the task fails at once, without its retries (they would meet the same moved table)."""

    retryable: bool = False


def write_again(boot_task, write_task, context, result_prefix: str) -> dict:
    """``boot_task`` (the run's bootstrap-index) and ``write_task`` (its assign-and-write) run again here, their
    templates rendered for this run; the new assign-and-write result. Its staging replaces the one the commit
    refused (the same run: the same commit identity). Their result files are named ``<result_prefix>.<task>``."""
    boot = copy.copy(boot_task)
    boot.render_template_fields(context)
    booted = boot.run_job(context, result_task_id=f"{result_prefix}.{boot_task.task_id}")
    write = copy.copy(write_task)
    write.render_template_fields(context)
    write.continue_from(booted)  # the new bootstrap's result
    return write.run_job(context, result_task_id=f"{result_prefix}.{write_task.task_id}")
