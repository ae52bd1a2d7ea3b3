"""Common frame of every Spark job: read the job spec from a private file, run, hand the result dict back
in a file.

The spec holds the catalog options (object-store keys, tokens), so it never travels on a command line
(visible to every user in ``ps``): the operator writes it to a file only its user can read, in a private
temporary directory on the Airflow worker, and passes that file's path; the job deletes the file as soon
as it has read it. The driver must therefore run on the worker: client deploy mode (the default; local,
standalone, YARN and K8s clients) — cluster deploy mode is refused by the operator.

On a Spark Connect connection there is no driver process: the operator calls the same frame
(``execute_job``) in its task process, hands it the server's URL, and the job's ``spark_session()`` is a
Connect client session (airflow_paimon/spark/connect.py). The spec then never leaves memory.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import traceback
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import InternalError, heals_by_rewrite, is_retryable
from airflow_paimon.engine.identifier import validate_identifier
from airflow_paimon.engine.jobs.specs import JobSpec, Wire
from airflow_paimon.spark.connect import JobKilled, connect_session, default_parallelism, stop_session

log = logging.getLogger("airflow_paimon.job")

SPEC_FILE = "spec.json"


@contextmanager
def spec_file(spec: dict) -> Iterator[str]:
    """The path of a file holding ``spec`` (mode 0600, in a fresh mode-0700 directory); removed on exit."""
    directory = tempfile.mkdtemp(prefix="airflow-paimon-spec-")  # created 0700, name unguessable
    try:
        path = os.path.join(directory, SPEC_FILE)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(spec, f)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def read_spec_file(path: str) -> dict:
    """The spec in ``path``; the file (and its private directory, if empty) is deleted once read."""
    try:
        with open(path) as f:
            return json.load(f)
    finally:
        for remove in (os.unlink, lambda p: os.rmdir(os.path.dirname(p))):
            try:
                remove(path)
            except OSError:
                pass


def parse_args(argv: list[str] | None = None) -> tuple[dict, str]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec-file", required=True, help="a file holding the job spec as JSON; deleted once read")
    parser.add_argument("--result-uri", required=True, help="where to write the result JSON")
    args = parser.parse_args(argv)
    return read_spec_file(args.spec_file), args.result_uri


# A word in an option's name that makes its value a secret: fs.s3.secret-key, fs.oss.accessKeyId, token,
# dlf.security-token, fs.azure.account.key.<account>.dfs.core.windows.net, header.Authorization, ...
_SECRET_WORDS = {"secret", "password", "passwd", "pwd", "token", "key", "credential", "credentials", "signature",
                 "authorization", "sas"}
# ... unless a later word says the value names or locates one instead: token.provider (dlf, bear),
# dlf.token-loader, dlf.token-path, fs.s3a.aws.credentials.provider, ...
_NOT_THE_SECRET = {"provider", "providers", "type", "loader", "path", "file", "dir", "class", "factory", "uri",
                   "url", "endpoint", "enabled", "mode", "algorithm", "format"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # fs.oss.accessKeyId -> fs oss access Key Id


def is_secret_option(name: str) -> bool:
    """Whether the catalog option ``name`` holds a secret (its value is redacted), by the words of its name.
    ``table-default.*`` options are tables' options (table-default.bucket-key: a column), never secrets."""
    if name.startswith("table-default."):
        return False
    words = [w.lower() for w in _WORD.findall(name)]
    return any(w in _SECRET_WORDS and not _NOT_THE_SECRET.intersection(words[i + 1:]) for i, w in enumerate(words))


def secrets_of(spec: dict) -> list[str]:
    """Catalog option values that must not reach a log or an error message: those of options named like a
    secret (is_secret_option), longest first."""
    options = spec.get("catalog_options") or {}
    found = {str(v) for k, v in options.items() if v and is_secret_option(str(k))}
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` (a log line, an error message; never a result's fields) with every secret replaced by ***."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


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
    result, or its error (``{"error", "retryable", "rewrite"}``: whether a retry, or writing the run's batch again,
    can help: engine/errors.py),
    to ``run.result_uri``; True when it succeeded. A secret catalog option's value
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
        error = redact(f"{type(e).__name__}: {e}", secrets)
        # the error's own flag, across the process boundary: the operator decides from it, not from the name
        failed = {"error": error, "retryable": is_retryable(e), "rewrite": heals_by_rewrite(e)}
        storage.write_bytes_atomic(result_uri, json.dumps(failed).encode())
        return False
    text = json.dumps(result)
    storage.write_bytes_atomic(result_uri, text.encode())
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
