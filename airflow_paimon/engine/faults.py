"""Named crash points for the fault tests (tests/faults): ``crash_point(name)`` kills the calling process
with SIGKILL — no clean-up, no exception handler, no atexit — when the environment variable
``AIRFLOW_PAIMON_CRASH_AT`` equals ``name``. Unset (always, outside those tests) it is a dictionary lookup.
With ``AIRFLOW_PAIMON_CRASH_ONCE`` naming a file as well, the process dies there only while that file exists, and
removes it first: one kill, and every later process in the same environment (a task's retry) passes.

The points sit where a crash leaves the most to recover from (files written but not yet published, a
snapshot made but its index not yet out); a retry of the same task must converge from each of them."""
from __future__ import annotations

import os
import signal

CRASH_AT, CRASH_ONCE = "AIRFLOW_PAIMON_CRASH_AT", "AIRFLOW_PAIMON_CRASH_ONCE"


def crash_point(name: str) -> None:
    if os.environ.get(CRASH_AT) == name:
        once = os.environ.get(CRASH_ONCE)
        if once is not None:
            try:
                os.remove(once)  # this process takes the one kill; a later one finds no file
            except FileNotFoundError:
                return
        os.kill(os.getpid(), signal.SIGKILL)
