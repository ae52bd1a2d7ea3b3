"""A class-data-sharing (CDS) archive for the driver JVM of each job: the JVM maps the Spark classes a job
loads from one file instead of reading, verifying and linking them from the jars again — about half of a
spark-submit's start (tests/benchmarks/README.md, "Where a spark-submit's seconds go").

A job's run maps its archive (``-XX:SharedArchiveFile``) when there is one. Without one it runs as before archives
and leaves writing it to spark/warm_up.py, in the background once the run succeeded: a JVM dumping its classes at
exit (``-XX:ArchiveClassesAtExit``, JDK 13+; Spark 4 needs 17) took 10-40 s, longer than the run, so the job's
first run was 3.5x a later one. ``python -m airflow_paimon.spark.warm_up`` writes them before any run. Every job's
driver loads the same classes from the same class path but for one difference, whether it starts a Spark session:
so there are two archives, ``session`` and ``driver-only`` (Job.driver_only), shared by the jobs of each kind, and
a DAG's first job of a kind warms up the next ones. An archive's name is the kind and a digest of the spark-submit
and java executables (path, size, mtime) and the conf that changes the driver's class path, so an upgrade or
another ``--jars`` gets its own. One the JVM cannot use (another class path, a damaged file) is ignored by the
JVM, which then runs as without it.

Archives live in ``$AIRFLOW_PAIMON_CDS_DIR`` when it is set (an image's: written when the image is built, found
by every container of it whatever its home; docs/install.md), else ``$XDG_CACHE_HOME/airflow-paimon/cds`` (default
``~/.cache``); the warm-up only writes one into
place by an atomic rename after its JVM exited cleanly, so a run never maps a partial file. A user's own
``spark.driver.extraJavaOptions`` replaces ours (submit.py), and with them the archive.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

# Conf that changes what the driver JVM loads from where: part of the archive's name.
CLASS_PATH_CONF = ("spark.driver.extraClassPath", "spark.jars", "spark.jars.packages",
                   "spark.driver.userClassPathFirst")
# The JVM reports signed jars it skips and archives it cannot map on stdout (the task log): the archive is an
# optimisation, its messages are noise.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
STALE_SECONDS = 3600  # a temporary archive (or warm-up lock) this old is of a JVM that never finished


CDS_DIR = "AIRFLOW_PAIMON_CDS_DIR"


def cache_dir() -> Path:
    if os.environ.get(CDS_DIR):
        return Path(os.environ[CDS_DIR])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "airflow-paimon" / "cds"


def _executable(name: str, env: dict[str, str]) -> list:
    """Path, size and mtime of ``name`` as the spark-submit process finds it (a replaced file: another archive)."""
    found = shutil.which(name, path=env.get("PATH"))
    if not found:
        return [name, None]
    real = os.path.realpath(found)
    stat = os.stat(real)
    return [real, stat.st_size, stat.st_mtime_ns]


def _java(env: dict[str, str]) -> list:
    java_home = env.get("JAVA_HOME")
    if java_home:
        return _executable(os.path.join(java_home, "bin", "java"), {"PATH": os.path.join(java_home, "bin")})
    return _executable("java", env)


@dataclass(frozen=True)
class DriverArchive:
    kind: str  # "session" or "driver-only": the jobs that share it
    path: Path  # the archive, once some run of a job of its kind wrote it
    staging: Path  # where this run's JVM dumps it when there is none yet

    @classmethod
    def for_driver(cls, driver_only: bool, conf: dict, env: dict[str, str],
                   directory: Path | None = None) -> "DriverArchive":
        """The archive of the jobs whose driver starts no Spark session (``driver_only``), or of those that do."""
        kind = "driver-only" if driver_only else "session"
        identity = [kind, _executable("spark-submit", env), _java(env), [conf.get(k) for k in CLASS_PATH_CONF]]
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
        directory = directory or cache_dir()
        return cls(kind, directory / f"{kind}-{digest}.jsa", directory / f".{kind}-{digest}.{uuid.uuid4().hex}.tmp")

    def java_options(self) -> str:
        """The driver's JVM options: map the archive; none while there is none (the warm-up writes it)."""
        return f"-XX:SharedArchiveFile={self.path} {QUIET}" if self.path.exists() else ""

    def dump_options(self) -> str:
        """The warm-up's JVM options: dump the classes it loaded to ``staging`` at exit ("" where it cannot)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:  # a read-only home: the job runs as without an archive
            return ""
        self._remove_stale()
        return f"-XX:ArchiveClassesAtExit={self.staging} {QUIET}"

    @property
    def lock(self) -> Path:
        """Held (created exclusively) by the warm-up writing this archive, so two tasks start one warm-up."""
        return self.path.with_name(f".{self.path.stem}.warming")

    def finish(self, succeeded: bool) -> None:
        """After the warm-up's spark-submit: a dumped archive goes into place if it succeeded, else away."""
        if not self.staging.exists():
            return
        if succeeded and self.staging.stat().st_size > 0:
            os.replace(self.staging, self.path)
        else:
            self.staging.unlink(missing_ok=True)

    def _remove_stale(self) -> None:
        cutoff = time.time() - STALE_SECONDS
        for tmp in [*self.path.parent.glob(".*.tmp"), *self.path.parent.glob(".*.warming")]:
            try:
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()
            except OSError:
                pass
