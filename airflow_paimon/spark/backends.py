"""The Airflow side's one way into spark/: how an operator's job runs, as the Apache Spark provider's deployment
modes — one backend per kind of Spark connection, each submitting the job, waiting for it to end and leaving its
result (or its error) in the result file, and each able to kill it — and the table of jobs the operators name
(spark/job_registry.py's ``JOBS``, ``progress_line``). Operators, hooks and job_env's steps import spark/ through
this module only (tests/unit/project/test_layers.py); what crosses is the hand-off's (airflow_paimon/handoff.py: the
spec, the result file, ``Failure``).

- ``spark`` connection → SparkSubmitBackend: ``spark-submit spark_jobs/<job>.py`` through SparkSubmitHook, the
  job's driver in its own process (client deploy mode).
- ``spark_connect`` connection → ConnectBackend: the job runs in the task process as a Spark Connect client of
  the connection's server (no driver JVM, no interpreter start), or in the job environment (``connect_job``).

Airflow is imported inside the functions that use it: the job environment's step ``connect_job`` imports this
module without Airflow. A DAG file imports it (through operators/spark_job.py) for the table of jobs alone: nothing
heavy at module level.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable

from airflow_paimon.engine.errors import InternalError
from airflow_paimon.spark.job_registry import JOBS, Job, progress_line

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_paimon.job_env import JobEnv

    from airflow_paimon.spark.job_frame import JobRun

__all__ = ["JOBS", "ConnectBackend", "Job", "JobBackend", "SparkSubmitBackend", "backend_for", "connect_job",
           "entry_script", "progress_line"]

# How ConnectBackend runs its job when the job side is in another environment: ``in_job_env(job_env, on_start=...,
# job=..., spec=..., result_uri=..., remote=..., conf=...) -> bool``, the job environment's step ``connect_job``
# (job_env/steps.py, through job_env/step.py run_step). The Airflow side gives it (job_env/ is its, above spark/).
InJobEnv = Callable[..., bool]


class JobBackend(ABC):
    """Runs one job of spark/job_registry.py on a spec dict; the result goes to ``result_uri`` (the job writes it)."""

    def __init__(self, job: Job, table: str):
        self.job, self.table = job, table

    @abstractmethod
    def run(self, spec: dict, result_uri: str) -> str | None:
        """Submit the job on ``spec`` and wait for its end: None when it succeeded, else why it failed (the
        result file then holds the job's own error, if it got as far as writing one)."""

    @abstractmethod
    def kill(self) -> None:
        """Stop the running job (called from the task's on_kill); it commits nothing."""


def entry_script(job: Job) -> str:
    """The entry script of ``job`` (spark/submit.py finds it)."""
    from airflow_paimon.spark.submit import entry_script as script_path

    return script_path(job.script)


class SparkSubmitBackend(JobBackend):
    """spark-submit of the job's entry script. The spec (catalog options: keys, tokens) goes in a private file
    whose path is the only argument, never on the command line; the job deletes the file once read, and so
    does this backend when the job ends however it ends. The driver reads that file, so it must run here:
    cluster deploy mode is refused."""

    def __init__(self, job: Job, table: str, conn_id: str, connection, job_env: JobEnv, spark_conf: dict[str, Any],
                 spark_bin_dir: str | None = None, extra_conf: Callable[[dict], dict] | None = None):
        from airflow.exceptions import AirflowException

        super().__init__(job, table)
        self.conn_id, self.job_env, self.spark_conf = conn_id, job_env, spark_conf
        self.extras = connection.extra_dejson
        self.deploy_mode = self.extras.get("deploy-mode")
        if self.deploy_mode == "cluster":
            raise AirflowException(f"{job.name} for table {table}: cluster deploy mode is not supported (the driver "
                                   "reads its spec from a private file on this worker); use client")
        self.master, self.spark_bin_dir = connection.host, spark_bin_dir
        self.extra_conf = extra_conf  # conf added on top (OpenLineage's, lineage.py)
        self.hook: SparkSubmitHook | None = None  # the running spark-submit's

    def run(self, spec: dict, result_uri: str) -> str | None:
        from airflow.exceptions import AirflowException
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        from airflow_paimon.handoff import job_arguments, spec_file
        from airflow_paimon.spark.submit import submit_conf, submit_settings, with_driver_archive

        settings = submit_settings(self.extras, self.master, self.deploy_mode, self.spark_conf, self.spark_bin_dir,
                                   job_env=self.job_env)
        conf = submit_conf(settings.python, settings.driver_python, {**self.spark_conf, **settings.conf})
        if self.extra_conf is not None:
            conf = self.extra_conf(conf)
        archive = with_driver_archive(self.job.driver_only, conf, self.spark_conf, settings.env)
        succeeded = False
        with spec_file(spec) as spec_path:
            self.hook = hook = SparkSubmitHook(conn_id=self.conn_id, conf=conf,
                                               name=f"paimon-{self.job.name}-{self.table}",
                                               application_args=job_arguments(spec_path, result_uri))
            try:
                # Its own session: kill() stops the spark-submit JVM and every Python process under it together.
                hook.submit(application=entry_script(self.job), env=settings.env, start_new_session=True)
                succeeded = True
            except AirflowException as e:
                return str(e)
            finally:
                if archive is not None and succeeded and not archive.path.exists():
                    from airflow_paimon.spark.warm_up import start_in_background

                    start_in_background(self.job.driver_only, conf, settings.env)
        return None

    def kill(self) -> None:
        """SIGTERM the spark-submit's process group (its JVM, the Python driver and workers), then the hook's
        own on_kill (a driver on a cluster, YARN application, K8s pod)."""
        from airflow_paimon.spark.spark_hook_compat import submit_process
        from airflow_paimon.spark.submit import stop_process_group

        if self.hook is None:
            return
        stop_process_group(submit_process(self.hook))
        self.hook.on_kill()


class ConnectBackend(JobBackend):
    """The job in the task process as a client of the ``spark_connect`` connection's server; its Spark work runs
    on the server's executors, and the spec never leaves memory."""

    def __init__(self, job: Job, table: str, conn_id: str, job_env: JobEnv, spark_conf: dict[str, Any],
                 in_job_env: InJobEnv | None = None):
        super().__init__(job, table)
        self.conn_id, self.job_env, self.spark_conf = conn_id, job_env, spark_conf
        self.in_job_env = in_job_env
        self.job_run: JobRun | None = None  # the running job's (spark/job_frame.py)
        self.process = None  # or the job environment's process running it (airflow_paimon/job_env)

    def run(self, spec: dict, result_uri: str) -> str | None:
        from airflow_paimon.job_env import runs_here
        from airflow_paimon.spark.connect import connection_url
        from airflow_paimon.spark.job_frame import JobRun, execute_job
        from airflow_paimon.spark.job_runner import job_function

        if not runs_here(self.job_env):  # the client in the job environment; the URL (its token) goes in the spec file
            if self.in_job_env is None:
                raise InternalError(f"{self.job.name} for table {self.table}: the job side runs in another "
                                    "environment, and the backend was given no way to run it there (in_job_env)")
            succeeded = self.in_job_env(self.job_env, on_start=self._started, job=self.job.name, spec=spec,
                                        result_uri=result_uri, remote=connection_url(self.conn_id),
                                        conf=self.spark_conf)
            return None if succeeded else "Spark Connect job failed"

        self.job_run = run = JobRun(result_uri, remote=connection_url(self.conn_id), conf=self.spark_conf)
        if not execute_job(job_function(self.job), self.job.spec, spec, run):
            return "Spark Connect job failed"
        return None

    def kill(self) -> None:
        """Interrupt the job's sessions on the server and release them (JobRun.kill; in the job environment
        its SIGTERM handler does)."""
        if self.process is not None:
            from airflow_paimon.spark.submit import stop_process_group

            stop_process_group(self.process)
        if self.job_run is not None:
            self.job_run.kill()

    def _started(self, process) -> None:
        self.process = process


def backend_for(job: Job, table: str, conn_id: str, job_env: JobEnv, spark_conf: dict[str, Any],
                spark_bin_dir: str | None = None, extra_conf: Callable[[dict], dict] | None = None,
                in_job_env: InJobEnv | None = None) -> JobBackend:
    """The backend of the Spark connection ``conn_id``'s type: ``spark_connect`` → ConnectBackend, else
    SparkSubmitBackend (``extra_conf``, ``spark_bin_dir``: spark-submit's only; ``in_job_env``: ConnectBackend's
    only); ``job_env``: where the job side runs (resolve_job_env's, the operator's)."""
    from airflow.sdk import BaseHook

    from airflow_paimon.spark.connect import CONN_TYPE as CONNECT_CONN_TYPE

    connection = BaseHook.get_connection(conn_id)
    if connection.conn_type == CONNECT_CONN_TYPE:
        return ConnectBackend(job, table, conn_id, job_env, spark_conf, in_job_env)
    return SparkSubmitBackend(job, table, conn_id, connection, job_env, spark_conf, spark_bin_dir, extra_conf)


def connect_job(job: str, spec: dict, result_uri: str, remote: str, conf: dict) -> bool:
    """The job ``job`` as a Spark Connect client of ``remote`` in this process, its result in ``result_uri``
    (job_env/steps.py's ``connect_job``, in the job environment: ConnectBackend's job there); SIGTERM (the task's
    on_kill) interrupts its sessions' work on the server, as JobRun.kill does in-process."""
    import signal

    from airflow_paimon.spark.job_frame import JobRun, execute_job
    from airflow_paimon.spark.job_runner import job_function

    run = JobRun(result_uri, remote=remote, conf=conf)
    signal.signal(signal.SIGTERM, lambda *_: run.kill())
    return execute_job(job_function(JOBS[job]), JOBS[job].spec, spec, run)
