"""One Spark job as an Airflow task: the base operator every job's operator extends, and its error policy.

``PaimonSparkJobOperator`` builds the job spec (the type spark/job_registry.py names for the operator's ``job``),
decides from table metadata alone when it can (no Spark job), else runs the job through the backend of the Spark
connection's type (spark/backends.py: spark-submit of ``spark_jobs/<job>.py``, or a Spark Connect client in the
task process), reads the result file the job wrote and returns it (it lands in XCom). A failed job fails the task as
its error's class declares (``retried_by_flag``, ``_job_failed``): retried, at once without retries, or, for a commit
whose staged write went stale, a ``StaleWriteError`` the commit task heals (operators/rewrite.py).

DAG files import this module: it imports nothing heavy (pypaimon, pyarrow, pyspark come with the job)."""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.exceptions import AirflowException
from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from airflow_paimon.engine.errors import ValidationError, is_retryable
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.jobs.specs import JobSpec
from airflow_paimon.handoff import Failure, read_result, secrets_of
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.links import PaimonTableLink
from airflow_paimon.lineage import spark_openlineage_conf
from airflow_paimon.operators.rewrite import StaleWriteError
from airflow_paimon.operators.upstream import UpstreamResultMixin
from airflow_paimon.spark.backends import JOBS, progress_line

if TYPE_CHECKING:
    from airflow_paimon.job_env import JobEnv
    from airflow_paimon.spark.backends import JobBackend

# The module DAGs import the write operators from (operators/paimon.py): their ``__module__``, so the class path
# Airflow records for a task stays what it was before they were split by job (the serialized DAG's task module,
# the REST API's class_ref, the task logger's name, OpenLineage's ``disabled_for_operators``).
PUBLIC_MODULE = "airflow_paimon.operators.paimon"


@contextmanager
def retried_by_flag(what: str) -> Iterator[None]:
    """An error raised in the task process fails the task as its class declares (``retryable``, engine/errors.py):
    at once, without its retries (AirflowFailException, ``what: error``) when a retry cannot help; else as it is,
    for Airflow to retry."""
    try:
        yield
    except Exception as e:
        if is_retryable(e) or isinstance(e, AirflowFailException):  # already fails without retries, as it is
            raise
        raise AirflowFailException(f"{what}: {e}") from None


def templated_count(table: str, name: str, value, what: str = "a whole number") -> int | None:
    """A count or id argument that may be a template (rendered as text): None / "" / "None" mean not given."""
    if value in (None, "", "None"):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(table, f"{name} must be {what}", value=value) from None
    if number < 1:
        raise ValidationError(table, f"{name} must be at least 1", value=value)
    return number


class JobEnvMixin:
    """Where a task's job side runs (airflow_paimon/job_env): its argument ``job_python`` (an interpreter path,
    templated) wins over the extra ``job_python`` of its Spark connection ``spark_conn_id``, which wins over
    ``[paimon] job_python``; else the task's own interpreter, when it has the job side."""

    job_python: str | None  # the operator's
    spark_conn_id: str  # the operator's

    def job_env(self) -> JobEnv:
        """Where this task's job side runs, resolved now (its templates rendered)."""
        from airflow_paimon.job_env import resolve_job_env

        return resolve_job_env(self.job_python, self.spark_conn_id)


class PaimonSparkJobOperator(JobEnvMixin, UpstreamResultMixin, BaseOperator):
    """Base: submits one Spark job of ``spark_jobs/`` and returns the dict the job wrote as its result.
    ``job_python``: the job environment's interpreter for this task (JobEnvMixin), over the Spark connection's."""

    __module__ = PUBLIC_MODULE

    job: ClassVar[str]
    template_fields: Sequence[str] = ("table", "spark_conf", "paimon_conn_id", "spark_conn_id", "shuffle_partitions",
                                      "job_python")
    template_fields_renderers = {"spark_conf": "json"}
    ui_color = "#c9e7f5"
    operator_extra_links = (PaimonTableLink(),)

    def __init__(self, *, table: str, paimon_conn_id: str = PaimonHook.default_conn_name,
                 spark_conn_id: str = "spark_default", spark_conf: dict[str, Any] | None = None,
                 shuffle_partitions: int | None = None, spark_bin_dir: str | None = None,
                 openlineage_inject_parent_job_info: bool | None = None,
                 openlineage_inject_transport_info: bool | None = None, job_python: str | None = None,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.paimon_conn_id = paimon_conn_id
        self.spark_conn_id = spark_conn_id
        self.job_python = job_python
        self.spark_conf = spark_conf or {}
        self.shuffle_partitions = shuffle_partitions
        self.spark_bin_dir = spark_bin_dir  # where spark-submit is, when not next to this Python nor on PATH
        self._backend: JobBackend | None = None  # how the running job runs (spark/backends.py), for on_kill
        # As SparkSubmitOperator's flags; None: the [openlineage] spark_inject_* settings (lineage.py)
        self.openlineage_inject_parent_job_info = openlineage_inject_parent_job_info
        self.openlineage_inject_transport_info = openlineage_inject_transport_info

    def job_spec(self, context, hook: PaimonHook) -> JobSpec:
        raise NotImplementedError

    def common_spec(self, hook: PaimonHook) -> dict:
        """The JobSpec fields every job gets."""
        return {"catalog_options": hook.catalog_options(), "table": self.table,
                "shuffle_partitions": templated_count(self.table, "shuffle_partitions", self.shuffle_partitions)}

    def execute(self, context) -> dict:
        with retried_by_flag(f"{self.job} for table {self.table} failed"):
            return self._execute(context)

    def run_job(self, context, result_task_id: str | None = None) -> dict:
        """The job's result, run as this task does (its error raised as its class declares); ``result_task_id``:
        the name its result file goes by (default: this task's id)."""
        with retried_by_flag(f"{self.job} for table {self.table} failed"):
            return self._execute(context, result_task_id)

    def _execute(self, context, result_task_id: str | None = None) -> dict:
        """The job's result; ``result_task_id``: the name its result file goes by (default: this task's id)."""
        from airflow_paimon.engine.files import layout, storage

        validate_identifier(self.table)  # templated: checked here, before anything is submitted
        hook = PaimonHook(self.paimon_conn_id)
        storage.configure(hook.catalog_options())  # the result file is read with the connection's credentials
        spec = self.job_spec(context, hook)
        # the operator's job and its spec, as spark/job_registry.py pairs them
        if not isinstance(spec, JOBS[self.job].spec):
            raise TypeError(f"{type(self).__name__}.job_spec gave a {type(spec).__name__}, not the "
                            f"{JOBS[self.job].spec.__name__} of job {self.job}")
        raw = spec.to_dict()
        ti = context["ti"]
        result_uri = layout.result_file(hook.results_root(), ti.dag_id, ti.run_id, result_task_id or ti.task_id,
                                        ti.map_index, ti.try_number)
        started = time.monotonic()
        result = self.decide_from_metadata(raw)
        if result is None:
            self._submit(raw, result_uri, context)
            result = read_result(result_uri)
        self.log.info("%s", progress_line(self.job, result, time.monotonic() - started))  # the result, once
        return result

    def decide_from_metadata(self, spec: dict) -> dict | None:
        """The job's result when table metadata alone decides it (read in this process, no Spark job); None:
        there is work, submit the job. Default: always submit."""
        return None

    def _decided(self, decide) -> dict | None:
        """``decide()``'s result as a dict: an error a retry cannot help fails the task as the job's would; anything
        else (say, a store only the cluster reaches) leaves the decision to the job."""
        try:
            result = decide()
        except Exception as e:  # the Spark job decides (and reports) instead
            if not is_retryable(e):
                raise
            self.log.warning("%s: deciding from metadata failed (%s); submitting the job", self.table, e)
            return None
        return result  # a dict from job_env/steps.py, or None

    def _submit(self, spec: dict, result_uri: str, context=None) -> None:
        """Run the job through the backend of the Spark connection's type (spark/backends.py) and raise
        its error when it failed. Secret catalog options are masked in whatever the job prints."""
        from functools import partial

        from airflow.sdk.log import mask_secret

        from airflow_paimon.job_env import steps
        from airflow_paimon.job_env.step import run_step
        from airflow_paimon.spark.backends import backend_for

        for secret in secrets_of(spec):
            mask_secret(secret)
        def openlineage_conf(conf: dict) -> dict:  # OpenLineage's parent job and transport, on spark-submit
            return spark_openlineage_conf(conf, context, self.openlineage_inject_parent_job_info,
                                          self.openlineage_inject_transport_info)

        self._backend = backend = backend_for(JOBS[self.job], self.table, self.spark_conn_id, self.job_env(),
                                              self.spark_conf, self.spark_bin_dir,
                                              openlineage_conf if context is not None else None,
                                              in_job_env=partial(run_step, steps.connect_job))
        failure = backend.run(spec, result_uri)
        if failure is not None:
            self._job_failed(result_uri, failure)

    def _job_failed(self, result_uri: str, cause) -> None:
        """Raise the job's error (from its result file, the hand-off's envelope): a ``StaleWriteError`` when writing
        the run's batch again heals it (its ``rewrite``), without retries when the job says a retry cannot help (its
        ``retryable``); a job that wrote no error (a crash, a kill) is retried."""
        from airflow_paimon.engine.files import storage

        what = f"{self.job} for table {self.table} failed"
        failure = Failure.from_result(read_result(result_uri)) if storage.exists(result_uri) else None
        if failure is None:
            raise AirflowException(f"{what}: {cause}") from None
        raise failure.exception(what, AirflowException, AirflowFailException, rewrite=StaleWriteError) from None

    def on_kill(self) -> None:
        """The task was killed: stop the Spark job through its backend (spark-submit: its process group, and on a
        cluster the driver there through the hook; Spark Connect: the session's operations on the server).
        Nothing is committed by a killed job."""
        if self._backend is not None:
            self._backend.kill()
