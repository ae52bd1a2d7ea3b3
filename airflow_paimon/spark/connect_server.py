"""A Spark Connect server for the operators' Connect mode: Spark's own server (the jar ships in pyspark's
jars/) started through spark-submit with the jobs' conf, its executors' Python workers running an interpreter
that imports airflow_paimon.

    python -m airflow_paimon.spark.connect_server --port 15002 [--host 127.0.0.1] [--master 'local[*]']
        [--python /path/to/python] [--conf key=value ...]

replaces itself with (so signals reach the JVM directly)

    spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer --master ... --conf ...

``--python``: the executors' interpreter (``spark.pyspark.python``), default this one for a local master; on a
cluster it must exist on every executor host with airflow_paimon and the same Python and pyspark version as
the Airflow workers (the jobs' functions travel pickled). The server listens without authentication unless
you put it behind one (Spark Connect's token: ``--conf spark.connect.authenticate.token=...``, the
connection's password); bind it to loopback or a private network.
"""
from __future__ import annotations

import argparse
import os
import sys

from airflow_paimon.operators.submit import submit_settings
from airflow_paimon.spark.job import DRIVER_JAVA_OPTIONS, LOG_LEVEL, log4j2_java_options, submit_conf

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002  # Spark Connect's


def server_conf(python: str | None, host: str, port: int) -> dict[str, str]:
    """The jobs' submit conf (spark/job.py) for a long-lived server: its own daemon module, worker reuse off
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
                   python: str | None = None, conf: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) that start the server in the foreground."""
    settings = submit_settings({}, master, "client", conf or {})
    command = ["spark-submit", "--class", SERVER_CLASS, "--master", master, "--name", "airflow-paimon-connect"]
    for key, value in {**server_conf(python or settings.python, host, port), **(conf or {})}.items():
        command += ["--conf", f"{key}={value}"]
    return command, settings.env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m airflow_paimon.spark.connect_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", default="local[*]", help="Spark master of the server (default local[*])")
    parser.add_argument("--python", help="interpreter of the executors' Python workers (spark.pyspark.python)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark conf")
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    command, env = server_command(args.host, args.port, args.master, args.python, conf)
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
