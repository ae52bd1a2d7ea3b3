"""Common frame of every Spark job, on the job side of the hand-off (airflow_paimon/handoff.py): read the job spec
from its private file, run the job, hand its result dict back in the result file, or its error in the hand-off's
envelope (``Failure``) — and the job's Spark session.

On a Spark Connect connection there is no driver process: the operator calls the same frame (``execute_job``) in its
task process, hands it the server's URL, and the job's ``spark_session()`` is a Connect client session
(airflow_paimon/spark/connect.py). The spec then never leaves memory.
"""
from __future__ import annotations

import logging
import sys
import threading
import traceback
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import InternalError
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.jobs.specs import JobSpec, Wire
from airflow_paimon.handoff import Failure, parse_args, redact, secrets_of, write_result
from airflow_paimon.spark.connect import JobKilled, connect_session, default_parallelism, stop_session

log = logging.getLogger("airflow_paimon.job")


@dataclass
class JobRun:
    """One run of a job: where its result goes (None: nowhere, the caller takes the returned result) and, on
    Spark Connect, the server's URL (``remote``), the operator's ``spark_conf`` for the session, and the
    sessions the job opened: released when it ends, interrupted by ``kill()``. ``spark``: a session the
    caller already made, which ``spark_session()`` hands the job as it is (the fault tests' runner)."""
    result_uri: str | None
    remote: str | None = None
    spark: Any = None
    conf: dict[str, Any] = field(default_factory=dict)
    sessions: list = field(default_factory=list)
    on_close: list = field(default_factory=list)  # callables run when the job ends
    thread: int | None = None  # the thread running the job, while it runs
    killed: bool = False

    def kill(self) -> None:
        """Stop the job from outside: the server interrupts its sessions' operations (their Spark jobs and
        Python workers) and releases the sessions, so the job's next Spark call fails and it stages and
        commits nothing. Called in the job's own thread (Airflow's SIGTERM handler interrupting it), it also
        raises, which stops the job's driver-side Python as SIGTERM stops a spark-submit driver."""
        self.killed = True
        for session in list(self.sessions):
            with suppress(Exception):
                session.interruptAll()
            with suppress(Exception):
                session.stop()
        if self.thread == threading.get_ident():
            raise JobKilled("the task was killed")

    def close(self) -> None:
        for session in self.sessions:
            with suppress(Exception):
                stop_session(session)  # releases the session on the server
        self.sessions.clear()
        while self.on_close:
            self.on_close.pop()()


_RUN: ContextVar[JobRun | None] = ContextVar("airflow_paimon_job_run", default=None)


def current_run() -> JobRun:
    run = _RUN.get()
    if run is None:
        raise InternalError("no job is running (airflow_paimon.spark.job_frame.execute_job)")
    return run


@contextmanager
def job_running(run: JobRun) -> Iterator[JobRun]:
    """``run`` is the running job (current_run(), spark_session()) in this context; closed when it ends."""
    token = _RUN.set(run)
    run.thread = threading.get_ident()
    try:
        yield run
    finally:
        run.thread = None
        _RUN.reset(token)
        run.close()


def execute_job(job: Callable[[JobSpec], Wire], spec_type: type[JobSpec], raw: dict, run: JobRun) -> bool:
    """Run ``job`` (spark/job_runner.py job_function) on the spec ``raw`` read as ``spec_type``; write its
    result, or its error (the hand-off's envelope: ``Failure``, whether a retry or writing the run's batch again can
    help), to ``run.result_uri``; True when it succeeded. A secret catalog option's value
    reaches neither the log nor the error (both redacted); the result is written as the job returned it: its
    fields (paths, names) are no place for a secret, and redacting them would corrupt them."""
    if run.result_uri is None:
        raise InternalError("execute_job writes the job's result: the run needs a result_uri")
    result_uri = run.result_uri
    secrets = secrets_of(raw)
    storage.configure(raw.get("catalog_options") or {})  # the result file even when the job fails early
    try:
        with job_running(run):
            spec = spec_type.from_dict(raw)
            validate_identifier(spec.table)
            result = job(spec).to_dict()
    except Exception as e:  # noqa: BLE001 - every error crosses back to the task, named
        log.error("job failed: %s", redact(traceback.format_exc(), secrets))
        if run.killed and not isinstance(e, JobKilled):  # what failed is a consequence: name the cause
            e = JobKilled(f"the task was killed ({type(e).__name__} in the job)")
        # the error's own flags, across the process boundary: the operator decides from them, not from the name
        write_result(result_uri, Failure.of(e, secrets).to_result())
        return False
    text = write_result(result_uri, result)
    log.debug("result: %s", text)  # the operator logs it as one progress line
    return True


def run(job: Callable[[JobSpec], Wire], spec_type: type[JobSpec], argv: list[str] | None = None) -> None:
    """``job`` on the spec file and result URI from ``argv``, as a driver's main; exits non-zero when the job
    failed."""
    # The driver's Python log: ours at INFO, libraries' (pypaimon, py4j) only from WARNING. The operator logs the
    # result as one progress line (spark/job_registry.py); restating it here would print it twice.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("airflow_paimon").setLevel(logging.INFO)
    raw, result_uri = parse_args(argv)
    if not execute_job(job, spec_type, raw, JobRun(result_uri)):
        sys.exit(1)


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
# Arrow batches between the JVM and the Python workers are cut at this size too, not only at 10,000 rows: a write
# task's input rows are whole bucket parts (spark/pipelines/cross_partition.py), and batches of 10,000 of them
# swelled the JVM and the worker (B = 10M into 20M: 3,200 MiB per task at no limit, 2,480 MiB at 8 mb;
# tests/benchmarks/README.md).
ARROW_MAX_BYTES, ARROW_MAX_BYTES_DEFAULT = "spark.sql.execution.arrow.maxBytesPerBatch", str(8 * 2**20)


def spark_session(spec: JobSpec, app_name: str):
    """The job's Spark session: the running job's own ``spark`` when it has one; on its Spark Connect server a
    new client session, released when the job ends; else the driver's session of this spark-submit.

    Its shuffle partitions: the operator's ``shuffle_partitions``, else a ``spark.sql.shuffle.partitions`` in its
    ``spark_conf``, else Spark's default parallelism (the cores: local[N] N). Our shuffles' tasks each write
    files or hold an index shard, so one per core; a fixed 8 on two cores cost 6 task launches per shuffle
    (≈0.5 s of a small spark-submit), and on a big cluster left most cores idle. Arrow batches: at most
    ARROW_MAX_BYTES_DEFAULT unless ``spark_conf`` says otherwise."""
    from pyspark.sql import SparkSession
    run = _RUN.get()
    if run is not None and run.spark is not None:
        return run.spark
    remote = run.remote if run else None
    user_set: Callable[[str], bool]
    builder = SparkSession.builder.appName(f"{app_name} {spec.table}")
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
    if not remote:
        spark = builder.getOrCreate()
        user_set = spark.sparkContext.getConf().contains
    else:
        assert run is not None  # remote comes from the run
        spark = connect_session(builder, remote, run)
        user_set = run.conf.__contains__
    partitions = spec.shuffle_partitions or (None if user_set(SHUFFLE_PARTITIONS) else default_parallelism(spark))
    if partitions:
        spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
    if not user_set(ARROW_MAX_BYTES):
        spark.conf.set(ARROW_MAX_BYTES, ARROW_MAX_BYTES_DEFAULT)
    return spark
