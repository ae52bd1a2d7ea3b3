"""Test processes racing on one table: spawned (no fork of a parent full of threads), all joined and each
exiting 0 when the test's block ends, killed if it fails."""
from __future__ import annotations

import multiprocessing as mp
from contextlib import contextmanager

SPAWN = mp.get_context("spawn")


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
