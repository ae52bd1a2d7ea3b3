"""A Spark Connect server for the operators' Connect mode: Spark's own server (the jar ships in pyspark's
jars/) started through spark-submit with the jobs' conf, its executors' Python workers running an interpreter
that imports airflow_paimon.

    python -m airflow_paimon.spark.connect_server --port 15002 [--host 127.0.0.1] [--master 'local[*]']
        [--python /path/to/python] [--conf key=value ...] [--token-file PATH | --no-token]

replaces itself with (so signals reach the JVM directly)

    spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer --master ... --conf ...

``--python``: the executors' interpreter (``spark.pyspark.python``), default this one for a local master; on a
cluster it must exist on every executor host with airflow_paimon and the same Python and pyspark version as
the Airflow workers (the jobs' functions travel pickled).

Clients authenticate with a token (Spark Connect's pre-shared bearer token; the ``spark_connect``
connection's password). The server takes it from the environment variable SPARK_CONNECT_AUTHENTICATE_TOKEN,
which Spark reads itself when the conf ``spark.connect.authenticate.token`` is unset, so it never sits on a
command line (``ps`` shows those to every user; a process's environment only its own user and root see).
Without that variable a random token is generated and written to ``--token-file`` (default
~/.airflow-paimon/connect-<port>.token, mode 0600); the path, not the token, is printed. The token in
``--conf`` is refused. pyspark sends a token only over TLS or to ``localhost``: name the server
``localhost`` in the connection, or put it behind a TLS proxy (``use_ssl``); ``--no-token`` starts it without
authentication, for a network only trusted clients reach.
"""
from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from airflow_paimon.engine.errors import ConfigError

from airflow_paimon.spark.submit import (DRIVER_JAVA_OPTIONS, LOG_LEVEL, log4j2_java_options, submit_conf,
                                         submit_settings)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002  # Spark Connect's
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # read by the server when spark.connect.authenticate.token is unset
TOKEN_CONF = "spark.connect.authenticate.token"


def server_conf(python: str | None, host: str, port: int) -> dict[str, str]:
    """The jobs' submit conf (spark/submit.py) for a long-lived server: its own daemon module, worker reuse off
    (see connect_daemon.py), the JIT and GC left at the JVM's defaults (the short-job options are for drivers
    that live seconds), the gRPC endpoint."""
    conf = {k: v for k, v in submit_conf(python).items() if k != "spark.pyspark.driver.python"}
    conf[DRIVER_JAVA_OPTIONS] = log4j2_java_options(conf[LOG_LEVEL])  # our log4j2 configuration, not SHORT_JOB_*
    return {**conf,
            "spark.python.daemon.module": "airflow_paimon.spark.connect_daemon",
            "spark.python.worker.reuse": "false",
            "spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(port)}


def server_command(host: str = "127.0.0.1", port: int = DEFAULT_PORT, master: str = "local[*]",
                   python: str | None = None, conf: dict[str, str] | None = None,
                   token: str | None = None) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) that start the server in the foreground; clients must present ``token`` (None:
    no authentication), which goes in the environment, never in argv."""
    if TOKEN_CONF in (conf or {}):
        raise ConfigError(f"{TOKEN_CONF} on the command line is visible to every user (ps); "
                          f"set the environment variable {TOKEN_ENV} instead")
    from airflow_paimon.job_env import resolve_job_env

    # no Spark connection: the server serves them; its Python is ``python``, else [paimon] job_python, else this one
    settings = submit_settings({}, master, "client", conf or {}, job_env=resolve_job_env(python, None))
    workers = python or settings.python
    command = ["spark-submit", "--class", SERVER_CLASS, "--master", master, "--name", "airflow-paimon-connect"]
    for key, value in {**server_conf(workers, host, port), **(conf or {})}.items():
        command += ["--conf", f"{key}={value}"]
    env = {k: v for k, v in settings.env.items() if k != TOKEN_ENV}
    # Spark 4.2's Connect planner starts Python workers with PYSPARK_PYTHON (else python3), not
    # spark.pyspark.python: without it a job environment's interpreter would not run them
    if workers:
        env["PYSPARK_PYTHON"] = workers
        # and a pip-installed spark-submit finds its home by importing pyspark with PYSPARK_PYTHON, which a job
        # environment's interpreter cannot: it is this interpreter's pyspark
        env.setdefault("SPARK_HOME", pyspark_home())
    return command, {**env, TOKEN_ENV: token} if token else env


def pyspark_home() -> str:
    """The Spark home of this interpreter's pyspark (a pip install's package directory holds bin/ and jars/)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("pyspark is not installed in this interpreter: start the Spark Connect server from one "
                          "that has it (Airflow's, with the Spark provider)")
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def default_token_file(port: int) -> Path:
    return Path.home() / ".airflow-paimon" / f"connect-{port}.token"


def new_token(path: Path) -> str:
    """A random token, written to ``path`` (mode 0600, its directory created 0700), replacing an older one."""
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.replace(temporary, path)
    return token


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m airflow_paimon.spark.connect_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", default="local[*]", help="Spark master of the server (default local[*])")
    parser.add_argument("--python", help="interpreter of the executors' Python workers (spark.pyspark.python)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark conf")
    parser.add_argument("--token-file", type=Path, help=f"where a generated token is written when {TOKEN_ENV} is "
                                                        "unset (default ~/.airflow-paimon/connect-<port>.token)")
    parser.add_argument("--no-token", action="store_true", help="no authentication: any client that reaches the "
                                                                "port runs jobs as this user")
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    if TOKEN_CONF in conf:
        parser.error(f"--conf {TOKEN_CONF}=... would show the token to every user (ps); set {TOKEN_ENV} instead")
    token = None if args.no_token else os.environ.get(TOKEN_ENV)
    if not token and not args.no_token:
        path = args.token_file or default_token_file(args.port)
        token = new_token(path)
        print(f"Spark Connect token written to {path} (the spark_connect connection's password)", file=sys.stderr,
              flush=True)
    command, env = server_command(args.host, args.port, args.master, args.python, conf, token)
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
