"""Spark Connect mode, client side: a job runs in the Airflow task process as a Connect client (no driver JVM,
no interpreter start per task); its mapInArrow work runs on the server's executors, whose Python workers
import airflow_paimon (start the server with airflow_paimon/spark/connect_server.py).

Only what a Connect session lacks is here: no SparkContext, so the default parallelism comes from the server
(``default_parallelism``); the session conf is per session, so server-wide settings of an operator's
``spark_conf`` cannot apply and are named in the log.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import io
import logging
import os
import re
import socket
from urllib.parse import urlsplit

from airflow_paimon.spark import pyspark_compat
from airflow_paimon.spark.submit import submit_conf

log = logging.getLogger(__name__)

CONN_TYPE = "spark_connect"  # the Spark provider's connection type (SparkConnectHook)
CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"  # pyspark's marker of a process in Connect mode
# When the server states no parallelism at all (not expected: Spark always plans spark.range() with one).
FALLBACK_PARALLELISM = 2


def connection_url(conn_id: str) -> str:
    """``sc://host:port/;user_id=...;token=...;use_ssl=...`` of a ``spark_connect`` connection, as the Spark
    provider builds it. It carries the token: never log it, never put it on a command line."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    return SparkConnectHook(conn_id).get_connection_url()


# A job's session asks for no progress reports: the server streams one to the client every so often while a query
# runs (for a shell's progress bar; a job shows none), and the client answers each with a ReleaseExecute call.
# A 100k-row assign-and-write received 3-12 of them, and 100 with 200 shuffle partitions (tests/benchmarks/README.md).
NO_PROGRESS_REPORTS = {"spark.connect.progress.reportInterval": "-1"}


def session_conf(conf: dict) -> dict[str, str]:
    """The session-level part of the jobs' submit conf (spark/submit.py submit_conf: the UTC time zone) and
    NO_PROGRESS_REPORTS, with the operator's ``spark_conf`` on top. Keys a session cannot set (the server's:
    executors, memory, Python, ...) are left out and logged."""
    ours = {**{k: v for k, v in submit_conf(None).items() if k.startswith("spark.sql.")}, **NO_PROGRESS_REPORTS}
    server_wide = sorted(k for k in conf if not k.startswith("spark.sql."))
    if server_wide:
        log.warning("Spark Connect: %s are the server's settings, not a session's; set them where the server "
                    "starts (airflow_paimon/spark/connect_server.py --conf)", ", ".join(server_wide))
    return {**ours, **{k: str(v) for k, v in conf.items() if k.startswith("spark.sql.")}}


class JobKilled(Exception):
    """The task was killed while its job ran in the task process (Spark Connect mode)."""

    retryable: bool = True  # nothing of the job was wrong: Airflow's own rules for a killed task apply


# A server that does not answer fails the task within seconds, for Airflow's retries to decide: pyspark's own
# client would keep retrying for at least 10 minutes (its DefaultPolicy), the task showing nothing meanwhile.
REACH_SECONDS = 10.0       # to open a TCP connection to the server before the session
RETRIES, MAX_BACKOFF_MS = 6, 10_000  # then pyspark's retries of a call: 50 ms x4 per retry, at most 10 s (~25 s)


# HTTP/2's client connection preface and an empty SETTINGS frame: a gRPC server answers with SETTINGS of its own
EMPTY_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # length 0, type SETTINGS, no flags, stream 0
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + EMPTY_SETTINGS


def reach(remote: str, seconds: float | None = None) -> None:
    """Fail now, in words, when the server of ``remote`` (``sc://host:port/;...``) takes no TCP connection, or takes
    one and does not answer HTTP/2's connection preface (plain-text servers; over TLS the handshake is the client's):
    a server that stopped answering would hang the job's calls, which have no deadline."""
    seconds = REACH_SECONDS if seconds is None else seconds
    address, *params = remote.split(";")
    parts = urlsplit(address)
    host, port = parts.hostname or "localhost", parts.port or 15002
    try:
        sock = socket.create_connection((host, port), timeout=seconds)
    except OSError as e:  # retryable (an OSError): the server may be back by the task's next try
        raise ConnectionError(f"the Spark Connect server {host}:{port} took no connection within {seconds:.0f} s "
                              f"({e}); is it running (python -m airflow_paimon.spark.connect_server)?") from None
    with sock:
        if any(p.strip().lower() == "use_ssl=true" for p in params):
            return
        try:
            sock.sendall(HTTP2_PREFACE)
            answered = sock.recv(9)
        except OSError:  # a timeout among them
            answered = b""
    if not answered:
        raise ConnectionError(f"the Spark Connect server {host}:{port} took a connection but did not answer within "
                              f"{seconds:.0f} s; is it a Spark Connect server, and is it stuck?")


def bounded_retries(session) -> None:
    """pyspark's retry policy for the calls of ``session``, bounded to about 25 s of waiting."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    session.client.set_retry_policies([DefaultPolicy(max_retries=RETRIES, max_backoff=MAX_BACKOFF_MS)])


def connect_session(builder, remote: str, run):
    """A new session on the Connect server ``remote``, registered with the running job (``run``, a
    spark/job_frame.py JobRun) so that it is released when the job ends and interrupted when the task is killed."""
    for key, value in session_conf(run.conf if run else {}).items():
        builder = builder.config(key, value)
    if run is not None and run.killed:
        raise JobKilled("the task was killed")
    reach(remote)
    connect_mode_before = os.environ.get(CONNECT_MODE)
    session = builder.remote(remote).create()  # sets CONNECT_MODE: pyspark's functions now build Connect columns
    bounded_retries(session)
    if run is not None:
        run.sessions.append(session)
        # once the job is done the process is classic again: a spark-submit it starts (its env inherited) or a
        # later job in it must not find itself in Connect mode
        run.on_close.append(lambda: _restore_env(CONNECT_MODE, connect_mode_before))
    return session


# How long a job's end waits for its session's result releases (pyspark's own close waits as long)
RELEASES_SECONDS = 10


def stop_session(session) -> None:
    """Release ``session`` on the server once the releases of its consumed results are done. pyspark sends those
    asynchronously, and its ``stop()`` releases the session before it waits for them: under load a release still
    in flight then fails with SESSION_CLOSED and pyspark logs a warning, which the task log shows as an error."""
    pending = pyspark_compat.pending_releases(session)
    if pending:
        concurrent.futures.wait(pending, timeout=RELEASES_SECONDS)
    session.stop()


def _restore_env(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def is_connect_session(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark) -> int:
    """Spark's default parallelism, which sizes our task counts. A classic session (spark-submit) asks its
    SparkContext, as before. A Connect session has none: ``spark.default.parallelism`` when the server sets it
    (what SparkContext.defaultParallelism returns then), else the splits the server plans for spark.range(),
    which Spark sizes by that same defaultParallelism (local[N]: N, a cluster: its executors' cores) — or by
    ``spark.sql.leafNodeDefaultParallelism`` when that is set. Read from the plan: no job runs."""
    if not is_connect_session(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        spark.range(0, 1).explain()
    found = re.search(r"splits=(?:Some\()?(\d+)", plan.getvalue())
    if found:
        return int(found.group(1))
    log.warning("Spark Connect: no parallelism in the plan of spark.range(); assuming %d", FALLBACK_PARALLELISM)
    return FALLBACK_PARALLELISM
