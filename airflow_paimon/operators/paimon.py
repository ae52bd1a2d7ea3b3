"""The write as Airflow tasks, as DAG files import them: bootstrap-index → assign-and-write → commit, each a Spark
job, and the base operator every job's operator extends.

This module is the public face only; what it names lives in the module of its job:

- operators/write.py: the write operators (``PaimonBootstrapIndexOperator``, ``PaimonAssignAndWriteOperator``,
  ``PaimonCommitOperator`` with its rewrite loop) and their parse-time argument checks;
- operators/spark_job.py: ``PaimonSparkJobOperator`` (build the spec, run the job through the Spark connection's
  backend, read its result) and its error policy (``retried_by_flag``);
- operators/upstream.py: ``UpstreamResultMixin``, how a task finds the upstream result it continues from.

DAG files import this module: it imports nothing heavy (pypaimon, pyarrow, pyspark come with the job).
"""
from __future__ import annotations

from airflow_paimon.operators.spark_job import (JobEnvMixin, PaimonSparkJobOperator, retried_by_flag,
                                                templated_count)
from airflow_paimon.operators.upstream import UpstreamResultMixin
from airflow_paimon.operators.write import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                            PaimonCommitOperator, check_choice, check_schema_evolution,
                                            run_generation)

__all__ = ["JobEnvMixin", "PaimonAssignAndWriteOperator", "PaimonBootstrapIndexOperator", "PaimonCommitOperator",
           "PaimonSparkJobOperator", "UpstreamResultMixin", "check_choice", "check_schema_evolution",
           "retried_by_flag", "run_generation", "templated_count"]
