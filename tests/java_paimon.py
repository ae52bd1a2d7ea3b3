"""Java Paimon 1.0, the reference implementation, as a reader for the tests.

Its bundle jar ships inside the PyPI wheel ``paimon-python-ali==0.1.1``
(``paimon_python_java/java_dependencies/paimon-python-java-bridge.jar``). The wheel is not a dependency of the
project (it pins an older py4j than Spark's): ``uv pip install --no-deps --target`` unpacks it once into a cache
outside the checkout, and ``tests/java/PaimonRead.java`` is compiled against the jar with the machine's javac.
The reads of a test process go to one reader JVM (``PaimonRead --serve``), started at the first read and stopped
at the end of the session (or with the process, ``processes.start``): a JVM start per read cost more than the read.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

import processes

WHEEL = "paimon-python-ali==0.1.1"
JAR = "paimon_python_java/java_dependencies/paimon-python-java-bridge.jar"
SOURCE = Path(__file__).resolve().parent / "java" / "PaimonRead.java"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "airflow-paimon-tests"


def missing() -> str | None:
    """Why Java Paimon cannot run here, or None."""
    for tool in ("java", "javac"):
        if not shutil.which(tool):
            return f"{tool} not found (Java 17 is needed for Java Paimon and for Spark)"
    if not (os.environ.get("UV") or shutil.which("uv")):
        return "uv not found (run the tests through `uv run`)"
    return None


def reader_classpath() -> str:
    """The jar and the compiled reader, built once per machine (keyed by the reader's source); concurrent
    pytest-xdist workers each build into a temporary directory and the first rename wins."""
    key = hashlib.sha256(SOURCE.read_bytes() + WHEEL.encode()).hexdigest()[:12]
    home = CACHE / f"java-paimon-{key}"
    if not (home / "classes" / "PaimonRead.class").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=CACHE, prefix=".build-"))
        uv = os.environ.get("UV") or shutil.which("uv")
        subprocess.run([uv, "pip", "install", "--quiet", "--no-deps", "--target", str(work / "wheel"), WHEEL],
                       check=True, timeout=600)
        subprocess.run(["javac", "-nowarn", "-cp", str(work / "wheel" / JAR), "-d", str(work / "classes"),
                        str(SOURCE)], check=True, timeout=300)
        try:
            work.rename(home)
        except OSError:  # another worker finished first
            shutil.rmtree(work, ignore_errors=True)
    return f"{home / 'classes'}{os.pathsep}{home / 'wheel' / JAR}"


# Reads of a test's small tables are mostly class loading and first calls: the C1 compiler only and the serial
# collector serve them sooner (the timed reads of java_count keep the JVM's defaults).
QUICK_START = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
READ_TIMEOUT = 300


class _Reader:
    """The test process's reader JVM: a request is one line of tab-separated PaimonRead args on its stdin; the
    answer, its stdout lines up to "#ok" or "#error" (the stack trace then in its stderr file)."""

    def __init__(self):
        fd, self.log = tempfile.mkstemp(prefix="java-paimon-reader-", suffix=".log")
        os.close(fd)
        with open(self.log, "ab") as err:  # append-only: our reads of the file never move the JVM's offset
            self.proc = processes.start(["java", *QUICK_START, "-cp", reader_classpath(), "PaimonRead", "--serve"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        self.pending = b""

    def stderr(self, since: int = 0) -> str:
        with open(self.log, "rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")[-3000:]

    def ask(self, args: list[str], timeout: float) -> tuple[bool, list[str], str]:
        """(succeeded, the answer's lines, the stderr written meanwhile); raises AssertionError when the JVM
        dies or does not answer within ``timeout`` s."""
        mark = os.path.getsize(self.log)
        self.proc.stdin.write(("\t".join(args) + "\n").encode())
        self.proc.stdin.flush()
        lines, deadline, out = [], time.monotonic() + timeout, self.proc.stdout.fileno()
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                text = line.decode()
                if text in ("#ok", "#error"):
                    return text == "#ok", lines, self.stderr(mark)
                lines.append(text)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                raise AssertionError(f"Java Paimon did not answer {args} within {timeout} s: {self.stderr(mark)}")
            chunk = os.read(out, 1 << 16)
            if not chunk:
                code = self.proc.wait(timeout=30)
                raise AssertionError(f"Java Paimon's reader exited ({code}) reading {args}: {self.stderr(mark)}")
            self.pending += chunk

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # end of requests: the JVM exits by itself
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        processes.stop(self.proc, timeout=5)
        os.unlink(self.log)


_reader: _Reader | None = None


def _read_lines(args: list[str], table: str) -> list[str]:
    """The answer's lines of one read in the process's reader JVM (started if none runs); a failed read raises
    AssertionError with Java's stack trace, a dead or stuck JVM with its stderr (the next read starts another)."""
    global _reader
    if _reader is None:
        _reader = _Reader()
    try:
        ok, lines, stderr = _reader.ask(args, READ_TIMEOUT)
    except AssertionError:
        _reader.close()
        _reader = None
        raise
    if not ok:
        raise AssertionError(f"Java Paimon could not read {table}: {stderr}")
    return lines


@atexit.register
def stop_reader() -> None:
    """Ends the reader JVM (at the session's end; the next read starts another)."""
    global _reader
    if _reader is not None:
        _reader.close()
        _reader = None


def java_read(warehouse: str, table: str = "db.t", snapshot_id: int | None = None,
              tag: str | None = None, incremental: tuple[int, int, str] | None = None,
              options: dict | None = None) -> pd.DataFrame:
    """Every row Java Paimon reads from ``table`` (its latest snapshot, or ``snapshot_id``, or the tag named);
    ``incremental=(start, end, scan_mode)``: Paimon's ``incremental-between`` read (with dynamic ``options``),
    each row with its ``_row_kind``."""
    which = ([f"tag:{tag}"] if tag is not None else [str(snapshot_id)] if snapshot_id is not None
             else ["incremental:" + ";".join([",".join(map(str, incremental)),
                                              *(f"{k}={v}" for k, v in (options or {}).items())])]
             if incremental is not None else [])
    lines = _read_lines([warehouse, table, *which], table)
    return pd.DataFrame([json.loads(line) for line in lines if line.startswith("{")])


def java_write(warehouse: str, table: str, rows, kinds, commit_user: str, commit_identifier: int) -> int:
    """Java Paimon writes ``rows`` (a pandas frame of the table's columns in order; ``kinds``: each row's kind,
    "+I"/"-D"...) and commits them as ``commit_user`` with ``commit_identifier``; the latest snapshot id."""
    cells = rows.astype(object).where(rows.notna(), "\\N").astype(str).to_numpy()
    lines = _read_lines([warehouse, table, f"write:{commit_user}:{commit_identifier}",
                         *(",".join([kind, *row]) for kind, row in zip(kinds, cells))], table)
    return json.loads(lines[-1])["snapshot"]


def java_compact(warehouse: str, table: str) -> int:
    """Java Paimon fully compacts every bucket of ``table`` (BatchTableWrite.compact); the latest snapshot id."""
    return json.loads(_read_lines([warehouse, table, "compact"], table)[-1])["snapshot"]


def java_count(warehouse: str, table: str = "db.t", reads: int = 1) -> dict:
    """Java Paimon reads every row of ``table`` without printing them: {"rows", "read_ms"} (catalog to last row,
    JVM start excluded) — for timing a full read. ``reads`` > 1: that many reads in one JVM, and also
    {"warm_read_ms", "warm_cpu_ms"}, the best read after the first (classes loaded, code compiled)."""
    mode = "count" if reads == 1 else f"count:{reads}"
    out = processes.run(["java", "-cp", reader_classpath(), "PaimonRead", warehouse, table, mode],
                        capture_output=True, text=True, timeout=600 * reads)
    if out.returncode != 0:
        raise AssertionError(f"Java Paimon could not read {table}: {out.stderr[-3000:]}")
    lines = [json.loads(line) for line in out.stdout.strip().splitlines()]
    return {**lines[0], **lines[-1]} if reads > 1 else lines[-1]


def _normal(frame: pd.DataFrame) -> pd.DataFrame:
    """pypaimon's read in the form the Java reader prints: timestamps as epoch microseconds, dates as epoch days,
    decimals as text."""
    import datetime
    import decimal

    out = frame.copy()
    for name in out.columns:
        col = out[name]
        if pd.api.types.is_datetime64_any_dtype(col):
            out[name] = col.map(lambda t: None if pd.isna(t) else int(pd.Timestamp(t).value // 1000))
        elif col.map(lambda v: isinstance(v, decimal.Decimal)).any():
            out[name] = col.map(lambda v: None if v is None else format(v, "f"))
        elif col.map(lambda v: type(v) is datetime.date).any():
            out[name] = col.map(lambda v: None if v is None else (v - datetime.date(1970, 1, 1)).days)
    return out


def assert_java_reads_as_pypaimon(warehouse: str, table: str, keys: list[str], snapshot_id: int | None = None,
                                  tag: str | None = None):
    """Java Paimon reads exactly the rows pypaimon reads (no key twice); returns Java's rows. ``tag``: Java reads
    the tag by name (``scan.tag-name``), pypaimon the tagged snapshot."""
    from airflow_paimon.engine.table.table import get_table
    from oracle import read_table

    ours = get_table({"warehouse": warehouse}, table)
    if tag is not None:
        snapshot_id = ours.tag_manager().get_or_throw(tag).id
    if snapshot_id is not None:
        ours = ours.copy({"scan.snapshot-id": str(snapshot_id)})
    expected = _normal(read_table(ours))
    actual = java_read(warehouse, table, None if tag is not None else snapshot_id, tag)
    if expected.empty:
        assert actual.empty, actual.head()
        return actual
    assert not actual.duplicated(keys).any(), actual[actual.duplicated(keys)].head()
    actual = actual[list(expected.columns)].sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(actual, expected.sort_values(keys).reset_index(drop=True), check_dtype=False)
    return actual
