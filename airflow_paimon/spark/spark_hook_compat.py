"""The seam between the spark-submit backend (spark/backends.py) and the Apache Spark provider's private members:
the one place that names them.

SparkSubmitHook starts spark-submit as a subprocess but offers no public handle on it, and its own ``on_kill``
kills only that process, not the Python driver and workers under it. To stop the whole process group on a task
kill (spark/submit.py stop_process_group), the backend needs the subprocess: the hook keeps it in a private
attribute. Each such use goes through a function here and is listed in ``REQUIRED``;
tests/unit/project/test_spark_hook_compat.py checks every entry against the installed
apache-airflow-providers-apache-spark, so an upgrade that renames or drops one fails there, naming it.
"""
from __future__ import annotations

import subprocess
from typing import Any

SPARK_SUBMIT_HOOK = "airflow.providers.apache.spark.hooks.spark_submit:SparkSubmitHook"
SUBMIT_PROCESS = "_submit_sp"  # the spark-submit subprocess.Popen, None until submit() starts it

REQUIRED = ((SPARK_SUBMIT_HOOK, SUBMIT_PROCESS, "submit_process: spark/backends.py SparkSubmitBackend.kill"),)


def submit_process(hook: Any) -> subprocess.Popen | None:
    """The spark-submit process ``hook.submit`` started (SparkSubmitHook), or None before it did."""
    return getattr(hook, SUBMIT_PROCESS, None)
