"""The driver JVM's class-data-sharing archive (spark/class_data_sharing.py): one per kind of job (session or
driver-only) and JVM set-up, dumped by a warm-up (spark/warm_up.py), put into place only after a successful one,
mapped by the runs of every job of its kind."""
from __future__ import annotations

import os
import time

import pytest

from airflow_paimon.spark.class_data_sharing import DriverArchive


@pytest.fixture
def env(tmp_path):
    """A PATH holding a spark-submit and a java (only their identity matters here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("spark-submit", "java"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": str(bin_dir)}


def test_warm_up_dumps_then_runs_map(tmp_path, env):
    cds = tmp_path / "cds"
    first = DriverArchive.for_driver(False, {}, env, cds)
    assert first.java_options() == ""  # a run without an archive dumps none: it waits for no dump
    assert f"-XX:ArchiveClassesAtExit={first.staging}" in first.dump_options()
    first.staging.write_bytes(b"archive")  # what the JVM writes as it exits
    first.finish(succeeded=True)
    assert first.path.read_bytes() == b"archive" and not first.staging.exists()

    second = DriverArchive.for_driver(False, {}, env, cds)
    assert second.path == first.path and second.staging != first.staging  # a staging file per run
    assert f"-XX:SharedArchiveFile={first.path}" in second.java_options()
    assert "ArchiveClassesAtExit" not in second.java_options()


def test_failed_or_empty_dump_is_never_put_in_place(tmp_path, env):
    for succeeded, content in ((False, b"archive"), (True, b"")):
        archive = DriverArchive.for_driver(True, {}, env, tmp_path / "cds")
        archive.dump_options()
        archive.staging.write_bytes(content)
        archive.finish(succeeded)
        assert not archive.path.exists() and not archive.staging.exists()
    DriverArchive.for_driver(True, {}, env, tmp_path / "cds").finish(True)  # the JVM wrote nothing: no error


def test_an_archive_per_kind_of_job_class_path_and_executables(tmp_path, env):
    from airflow_paimon.spark.job_registry import JOBS

    def name(driver_only=False, conf=None, environment=env):
        return DriverArchive.for_driver(driver_only, conf or {}, environment, tmp_path).path.name

    base = name()
    assert base.startswith("session-") and name() == base
    assert name(driver_only=True).startswith("driver-only-")
    # the jobs share two archives, one per kind, whose drivers load the same classes from the same class path
    kinds = {job.name: name(driver_only=job.driver_only) for job in JOBS.values()}
    assert set(kinds.values()) == {base, name(driver_only=True)}
    assert kinds["bootstrap_index"] == kinds["assign_and_write"] == kinds["compact"] == base
    assert kinds["commit"] == kinds["expire_snapshots"] != base
    assert name(conf={"spark.jars": "/opt/extra.jar"}) != base
    assert name(conf={"spark.driver.extraClassPath": "/opt/x"}) != base
    assert name(conf={"spark.sql.shuffle.partitions": "8"}) == base  # conf that loads no other classes
    java = os.path.join(env["PATH"], "java")
    os.utime(java, ns=(0, 0))  # another java (an upgrade in place)
    assert name() != base
    jdk = tmp_path / "jdk" / "bin"
    jdk.mkdir(parents=True)
    (jdk / "java").write_text("#!/bin/sh\n")
    assert name(environment={**env, "JAVA_HOME": str(jdk.parent)}) != name()  # JAVA_HOME's java, not PATH's


def test_stale_staging_files_are_removed(tmp_path, env):
    cds = tmp_path / "cds"
    cds.mkdir()
    stale, fresh = cds / ".commit-x.old.tmp", cds / ".commit-x.new.tmp"
    stale.write_bytes(b"a killed JVM's half dump")
    fresh.write_bytes(b"a running JVM's dump")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    DriverArchive.for_driver(True, {}, env, cds).dump_options()
    assert not stale.exists() and fresh.exists()


def test_an_unwritable_cache_leaves_the_job_without_an_archive(tmp_path, env):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    archive = DriverArchive.for_driver(True, {}, env, blocked / "cds")
    assert archive.java_options() == "" and archive.dump_options() == ""
    archive.finish(True)  # nothing was dumped: nothing to put in place
    assert not archive.path.exists()


def test_one_background_warm_up_per_archive(tmp_path, env, monkeypatch):
    from airflow_paimon.spark import warm_up

    started = []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(warm_up.subprocess, "Popen", lambda cmd, **kw: started.append((cmd, kw)))
    conf = {"spark.jars": "/opt/x.jar", "fs.s3a.secret.key": "s3cr3t", "spark.driver.extraJavaOptions": "-Xss4m"}
    warm_up.start_in_background(False, conf, env)
    warm_up.start_in_background(False, conf, env)  # a second task before the first warm-up ended
    assert len(started) == 1
    cmd, kw = started[0]
    assert kw["start_new_session"] and "s3cr3t" not in " ".join(cmd)  # only what decides the JVM's classes
    archive = DriverArchive.for_driver(False, warm_up.warm_up_conf(conf), env)
    assert archive.path == DriverArchive.for_driver(False, conf, env).path  # the name the job's runs look up
    assert archive.lock.exists()
    os.utime(archive.lock, (time.time() - 7200, time.time() - 7200))  # a warm-up that never finished
    warm_up.start_in_background(False, conf, env)
    assert len(started) == 2


def test_an_image_s_archive_directory_is_found_whatever_the_home(tmp_path, env, monkeypatch):
    """AIRFLOW_PAIMON_CDS_DIR (an image's archives, written at build) wins over the home's cache: a container with a
    fresh home, as a pod per task has, still maps them."""
    from airflow_paimon.spark.class_data_sharing import cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh-home" / ".cache"))
    monkeypatch.delenv("AIRFLOW_PAIMON_CDS_DIR", raising=False)
    assert cache_dir() == tmp_path / "fresh-home" / ".cache" / "airflow-paimon" / "cds"
    monkeypatch.setenv("AIRFLOW_PAIMON_CDS_DIR", str(tmp_path / "image-cds"))
    built = DriverArchive.for_driver(True, {}, env)
    assert built.path.parent == tmp_path / "image-cds"
    built.path.parent.mkdir()
    built.path.write_bytes(b"archive")
    assert f"-XX:SharedArchiveFile={built.path}" in DriverArchive.for_driver(True, {}, env).java_options()
