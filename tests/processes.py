"""Processes the tests start. ``running``: test processes racing on one table, spawned (no fork of a parent full
of threads), all joined and each exiting 0 when the test's block ends, killed if it fails. ``start``: a server or
job whose whole process group dies with this process, however it dies (SIGKILL included)."""
from __future__ import annotations

import atexit
import ctypes
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

SPAWN = mp.get_context("spawn")
PR_SET_PDEATHSIG = 1

# Polls its parent (this process) and kills the group once it is gone (re-parented); exits when the group is.
# pdeathsig alone reaches only the group's leader: daemons that fork (Spark's launch scripts, pg_ctl) leave
# the rest running.
_WATCHDOG = """import os, sys, time
parent, group = int(sys.argv[1]), int(sys.argv[2])
while os.getppid() == parent:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        sys.exit(0)
    time.sleep(0.5)
try:
    os.killpg(group, 9)
except ProcessLookupError:
    pass
"""

_started: dict[int, subprocess.Popen] = {}


@contextmanager
def running(target, args: list[tuple]):
    """One process of ``target`` per item of ``args``, started; yields them."""
    procs = [SPAWN.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    try:
        yield procs
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()


def _die_with_parent() -> None:  # in the child, before exec: SIGKILL when the thread that forked it ends
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def dying_options() -> dict:
    """Popen's keyword arguments for a child that leads a new process group (session) and gets SIGKILL when
    this thread ends; ``own`` the child then, for the rest of its group."""
    # pdeathsig fires when the forking *thread* ends: only the main thread outlives the tests
    main = threading.current_thread() is threading.main_thread()
    return {"start_new_session": True, **({"preexec_fn": _die_with_parent} if main else {})}


def own(proc: subprocess.Popen) -> subprocess.Popen:
    """Ties the process group ``proc`` leads (started with ``dying_options``) to this process: a watchdog kills
    it when this process dies, ``stop`` at interpreter exit."""
    subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(proc.pid)], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _started[proc.pid] = proc
    return proc


def start(args, **popen) -> subprocess.Popen:
    """``subprocess.Popen(args, **popen)`` in a new process group that dies with this process: its leader by
    pdeathsig, the rest by a watchdog process, and at interpreter exit by ``stop``."""
    return own(subprocess.Popen(args, **dying_options(), **popen))


def stop(proc: subprocess.Popen | None, timeout: float = 30) -> None:
    """SIGTERM to ``proc``'s process group, SIGKILL after ``timeout`` s; then reaps the leader."""
    if proc is None:
        return
    _started.pop(proc.pid, None)
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and group_alive(proc.pid):
            proc.poll()
            time.sleep(0.1)
        if not group_alive(proc.pid):
            break
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def run(args, timeout: float | None = None, **popen) -> subprocess.CompletedProcess:
    """``subprocess.run(args, timeout=..., **popen)`` through ``start``: on timeout (or an interrupt) the whole
    group is killed, not only its leader as ``subprocess.run`` does. Takes ``capture_output`` and ``text``."""
    if popen.pop("capture_output", False):
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc = start(args, **popen)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        stop(proc, timeout=5)
        raise
    if not group_alive(proc.pid):  # a daemon it left (pg_ctl's server) stays owned until ``stop``
        _started.pop(proc.pid, None)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def group_alive(group: int) -> bool:
    """Whether any process is left in the process group ``group``."""
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


@atexit.register
def _stop_all() -> None:
    for proc in list(_started.values()):
        stop(proc, timeout=5)
