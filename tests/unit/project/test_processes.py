"""A server a test starts (processes.start) dies with the pytest process that started it, even by SIGKILL: its
leader, and what it forked and left behind as a daemon does (Spark's launch scripts, PostgreSQL)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from java_paimon import missing
from processes import group_alive

TESTS = Path(__file__).resolve().parents[2]

# The inner tests write the process group of what they started, then wait to be killed.
INNER = {
    "forking daemon": '''
import time, processes

def test_server(tmp_path):
    # a daemon re-parented to init (the subshell exits), the leader still running: as Spark's scripts leave them
    server = processes.start(["sh", "-c", "(sleep 300 &); exec sleep 300"])
    open({group!r}, "w").write(str(server.pid))
    time.sleep(300)
''',
    "java reader": '''
import time, pytest, java_paimon

def test_server():
    with pytest.raises(AssertionError, match="could not read"):  # a failed read leaves the reader serving
        java_paimon.java_read("/nonexistent-warehouse", "db.t")
    open({group!r}, "w").write(str(java_paimon._reader.proc.pid))
    time.sleep(300)
''',
}


@pytest.mark.parametrize("server", list(INNER))
def test_a_server_dies_with_the_pytest_that_started_it(server, tmp_path):
    if server == "java reader" and missing():
        pytest.skip(missing())
    group_file = tmp_path / "group"
    (tmp_path / "test_inner.py").write_text(INNER[server].format(group=str(group_file)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    inner = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                              str(tmp_path / "test_inner.py")], cwd=tmp_path, env=env, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    group = None
    try:
        deadline = time.monotonic() + 120
        while not (group_file.exists() and group_file.read_text()):
            assert inner.poll() is None, inner.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the inner test did not start its server"
            time.sleep(0.2)
        group = int(group_file.read_text())
        members = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()
        assert len(members) >= (2 if server == "forking daemon" else 1), members
        os.kill(inner.pid, signal.SIGKILL)
        inner.wait()
        deadline = time.monotonic() + 5
        while group_alive(group) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(group), subprocess.run(["ps", "-o", "pid,ppid,args", "-g", str(group)],
                                                      capture_output=True, text=True).stdout
    finally:
        if inner.poll() is None:
            inner.kill()
        if group is not None and group_alive(group):
            os.killpg(group, signal.SIGKILL)
