"""The Python daemon of a Spark Connect server's executors (``spark.python.daemon.module``, set by
connect_server.py).

Spark 4.2 starts a daemon per Connect session (the workers' environment carries the session's
SPARK_JOB_ARTIFACT_UUID) and stops none before the server stops (SPARK-54055). Our jobs open a session per task,
so two things follow, and this module handles both:

- Start-up: a daemon that imports pyspark's worker side, pyarrow, pandas, pypaimon and the engine
  (airflow_paimon/spark/daemon.py) takes 1.5 s and more on every task. Here one *zygote* per executor JVM
  imports them once and forks each session's daemon: what Spark starts is a small launcher that hands the
  zygote its stdin/stdout/stderr (SCM_RIGHTS over a private unix socket), its environment and working
  directory; the forked daemon runs pyspark's daemon loop on them. The launcher stays as the process Spark
  knows: SIGTERM to it reaches the daemon; it exits when the daemon does. The zygote quits with its JVM.
- Clean-up: the server runs with worker reuse off, so a daemon without a worker for IDLE_SECONDS has no task
  left; it quits as on SIGTERM. Should its session run a task after all, Spark finds the daemon gone and
  starts another.

The daemon of non-Connect jobs (SPARK_JOB_ARTIFACT_UUID "default") is airflow_paimon/spark/daemon.py's, as in
spark-submit mode. Run by Spark as ``python -m airflow_paimon.spark.connect_daemon pyspark.worker``.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib

IDLE_SECONDS = float(os.environ.get("AIRFLOW_PAIMON_DAEMON_IDLE_SECONDS", "60"))
ZYGOTE_START_SECONDS = 120.0


def has_children(pid: int) -> bool:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone
            continue
        if int(stat[stat.rindex(b")") + 2:].split()[1]) == pid:  # the field after the state: the parent's pid
            return True
    return False


def quit_when_idle(idle_seconds: float = IDLE_SECONDS) -> None:
    """SIGTERM this daemon (pyspark's handler shuts it down) once it has had no worker for ``idle_seconds``."""
    pid, idle_since = os.getpid(), time.monotonic()
    while True:
        time.sleep(max(0.5, min(5.0, idle_seconds / 4)))
        if has_children(pid):
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= idle_seconds:
            os.kill(pid, signal.SIGTERM)
            return


def run_daemon() -> None:
    """pyspark's daemon loop, quitting when idle (a thread that only sleeps and reads /proc: the workers
    forked meanwhile start without it)."""
    threading.Thread(target=quit_when_idle, name="quit-when-idle", daemon=True).start()
    from pyspark.daemon import manager

    manager()


# --- the launcher: the process Spark starts ------------------------------------------------------------------

def socket_path(jvm_pid: int) -> str:
    """The zygote's socket: one per user, interpreter and executor JVM, in a directory only its user can open."""
    directory = os.path.join(tempfile.gettempdir(), f"airflow-paimon-zygotes-{os.getuid()}")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    if os.stat(directory).st_uid != os.getuid() or os.stat(directory).st_mode & 0o077:
        raise PermissionError(f"{directory} must be private to uid {os.getuid()}")
    return os.path.join(directory, f"{zlib.crc32(sys.executable.encode()):08x}-{jvm_pid}.sock")


def connect_to_zygote(path: str, jvm_pid: int) -> socket.socket:
    deadline = None
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(path)
            return conn
        except OSError:
            conn.close()
        if deadline is None:  # none running: start one, detached (it outlives this launcher, not the JVM)
            deadline = time.monotonic() + ZYGOTE_START_SECONDS
            subprocess.Popen([sys.executable, "-m", __spec__.name, "--zygote", path, str(jvm_pid)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, close_fds=True)
        elif time.monotonic() > deadline:
            raise TimeoutError(f"no zygote listening on {path}")
        time.sleep(0.05)


def launch() -> None:
    conn = connect_to_zygote(socket_path(os.getppid()), os.getppid())
    request = json.dumps({"env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(conn, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
    daemon_pid = int(conn.recv(64).decode())
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: os.kill(daemon_pid, signal.SIGTERM))
    for fd in (0, 1):  # the daemon holds Spark's pipes now; this process must not keep them open
        os.close(fd)
    while conn.recv(64):  # the daemon holds the other end: EOF when it exits
        pass


# --- the zygote ----------------------------------------------------------------------------------------------

def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    head, fds, _, _ = socket.recv_fds(conn, 8 + (1 << 20), 3)
    size, body = int.from_bytes(head[:8], "big"), head[8:]
    while len(body) < size:
        body += conn.recv(size - len(body))
    return json.loads(body), fds


def _become_daemon(listener: socket.socket, conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: take the launcher's pipes, environment and directory, run the daemon."""
    listener.close()
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    from airflow_paimon.spark.daemon import DROPPED_ZIPS

    sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                    if p and p not in sys.path and p not in DROPPED_ZIPS]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    conn.sendall(str(os.getpid()).encode())  # conn stays open: the launcher waits for it to close
    try:
        run_daemon()
    finally:
        os._exit(0)


def zygote(path: str, jvm_pid: int) -> None:
    from airflow_paimon.spark.daemon import preload

    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
    except OSError:  # a stale socket of a dead zygote, or another one just started
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            return  # another zygote serves this JVM
        except OSError:
            os.unlink(path)
            listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked daemons are reaped by the kernel

    def quit_with_the_jvm():
        while True:
            time.sleep(1)
            try:
                os.kill(jvm_pid, 0)
            except ProcessLookupError:
                try:
                    os.unlink(path)
                finally:
                    os._exit(0)

    threading.Thread(target=quit_with_the_jvm, daemon=True).start()
    while True:
        conn, _ = listener.accept()
        try:
            uid = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[4:8]
            if int.from_bytes(uid, sys.byteorder) != os.getuid():  # only our own user's launchers
                conn.close()
                continue
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:
            _become_daemon(listener, conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"]:
        zygote(sys.argv[2], int(sys.argv[3]))
    elif os.environ.get("SPARK_JOB_ARTIFACT_UUID", "default") != "default":
        launch()
    else:
        from airflow_paimon.spark.daemon import preload

        preload()
        from pyspark.daemon import manager

        manager()
