"""A staged run's data files survive orphan removal until the run commits or is abandoned, however old they
are; a commit whose staged files are gone anyway is refused with nothing committed."""
import os
from datetime import timedelta

import pytest

from airflow_paimon.engine.commit.staging import load
from airflow_paimon.engine.errors import PaimonJobError
from airflow_paimon.engine.commit.staging import data_file_paths
from airflow_paimon.engine.table.table import get_or_create_table, get_table
from airflow_paimon.operators.maintenance import PaimonRemoveOrphanFilesOperator
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.jobs.specs import MIN_ORPHAN_AGE_MS, OrphansSpec
from airflow_paimon.spark.remove_orphan_files import run_remove_orphan_files
from file_age import age
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_upsert
from orphan_tables import FIRST, SECOND, SPEC, arrow


@pytest.fixture
def staged(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(FIRST), run_id="first")
    spec = stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(SECOND), run_id="second")
    table = get_table(opts, "db.t")
    files = data_file_paths(table, load(table, spec.staging_uri).messages)
    assert files and all(os.path.exists(f.replace("file://", "")) for f in files)
    return opts, spec, f"{warehouse}/staging", files


def test_orphan_removal_keeps_staged_files_whatever_their_age(staged):
    opts, spec, staging_root, files = staged
    age(get_table(opts, "db.t").table_path)  # the staged data files too: old, still protected by the staging
    result = run_remove_orphan_files(OrphansSpec(catalog_options=opts, table="db.t", older_than_ms=MIN_ORPHAN_AGE_MS,
                                                 staging_root=staging_root))
    assert (result.orphan_files, result.stale_staging_dirs) == (0, 0)
    assert all(os.path.exists(f.replace("file://", "")) for f in files)
    assert run_commit(spec).snapshot_id == 2
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([FIRST, SECOND], "id"), "id")


def test_commit_refuses_when_a_staged_file_is_gone(staged):
    opts, spec, staging_root, files = staged
    os.remove(files[0].replace("file://", ""))
    with pytest.raises(PaimonJobError, match=f"table db.t: staged data file .*{os.path.basename(files[0])} is missing"):
        run_commit(spec)
    table = get_table(opts, "db.t")
    assert [s.id for s in table.snapshot_manager().list_snapshots()] == [1]
    assert_table_equals(table, expected_upsert([FIRST], "id"), "id")


def test_the_floor_is_not_the_default(staged):
    opts, spec, staging_root, files = staged
    stray = os.path.join(get_table(opts, "db.t").table_path.replace("file://", ""), "dt=a", "bucket-0",
                         "data-stray-0.parquet")
    with open(stray, "wb") as f:
        f.write(b"PAR1")
    age(stray, 2 * 3600)  # past the floor, younger than the default day: only a margin near the floor reaches it
    result = run_remove_orphan_files(OrphansSpec(catalog_options=opts, table="db.t", staging_root=staging_root))
    assert result.orphan_files == 0 and os.path.exists(stray)
    result = run_remove_orphan_files(OrphansSpec(catalog_options=opts, table="db.t", older_than_ms=MIN_ORPHAN_AGE_MS,
                                                 staging_root=staging_root))
    assert result.orphan_files == 1 and not os.path.exists(stray)
    assert all(os.path.exists(f.replace("file://", "")) for f in files)


def test_operator_older_than():
    op = PaimonRemoveOrphanFilesOperator(task_id="o", table="db.t", older_than=timedelta(hours=1))
    assert op.older_than == timedelta(hours=1)
    assert PaimonRemoveOrphanFilesOperator(task_id="o1", table="db.t").older_than == timedelta(days=1)
    with pytest.raises(ValueError, match="table db.t: older_than must be a timedelta of at least 1 hour"):
        PaimonRemoveOrphanFilesOperator(task_id="o2", table="db.t", older_than=timedelta(seconds=-1))


def test_commit_and_orphan_removal_agree_on_what_is_abandoned(tmp_path):
    """One definition (engine/commit/staging.abandoned): the newest file under a run's staging counts — a run
    whose staged.json is old but that still writes shard files is not abandoned, for either clean-up."""
    import time

    from airflow_paimon.engine.runs.commit import _drop_abandoned_staging
    from airflow_paimon.engine.commit.staging import abandoned
    from airflow_paimon.engine.maintenance.orphans import stale_staging
    from airflow_paimon.engine.jobs.specs import STAGING_RETENTION_SECONDS

    old = time.time() - STAGING_RETENTION_SECONDS - 3600
    runs = {}
    for name, fresh in (("dead", None), ("still-writing", "index/shard-00001.json"), ("empty-old", None)):
        run = tmp_path / "db.t" / name
        (run / "index").mkdir(parents=True)
        if name != "empty-old":
            (run / "staged.json").write_text("{}")
            (run / "index" / "shard-00000.json").write_text("{}")
        if fresh:
            (run / fresh).write_text("{}")
        for p in [run, *run.rglob("*")]:
            if not (fresh and p == run / fresh):
                os.utime(p, (old, old))
        runs[name] = run
    now = time.time()
    judged = {name: abandoned(str(run), now, STAGING_RETENTION_SECONDS) for name, run in runs.items()}
    assert judged == {"dead": True, "still-writing": False, "empty-old": True}
    assert sorted(p.rsplit("/", 1)[-1] for p in stale_staging(str(tmp_path / "db.t"), now, int(now * 1000))) == [
        "dead", "empty-old"]
    _drop_abandoned_staging(str(tmp_path / "db.t"), STAGING_RETENTION_SECONDS)
    assert sorted(p.name for p in (tmp_path / "db.t").iterdir()) == ["still-writing"]
