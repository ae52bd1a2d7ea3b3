"""Make files look old: orphan removal never touches a file younger than its floor (one hour), so tests that
want a file judged set its modification time back instead of waiting."""
from __future__ import annotations

import os
import time

HOURS_AGO = 2 * 3600  # past the one-hour floor of orphan removal


def age(path: str, seconds: float = HOURS_AGO) -> None:
    """``path`` (a file, or every file under a directory; plain or file:// URI) last modified ``seconds`` ago."""
    path = path.removeprefix("file://")
    when = time.time() - seconds
    files = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
    for f in files:
        os.utime(f, (when, when))
