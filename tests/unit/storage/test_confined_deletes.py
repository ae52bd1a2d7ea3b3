"""Every delete of the provider stays inside the directory it owns, whatever the URIs resolve to."""
import os
import shutil
from dataclasses import replace

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.index.store import clean_up
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from airflow_paimon.engine.runs.commit import run_commit
from airflow_paimon.engine.jobs.specs import CommitSpec
from local_runner import bootstrap, stage_run, upsert
from oracle import assert_table_equals, expected_upsert

SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                            "primary_keys": ["id"], "partition_keys": ["dt"],
                            "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}})
FIRST = pd.DataFrame({"id": [1, 2, 3], "dt": list("aab"), "v": [1.0, 2.0, 3.0]})
SECOND = pd.DataFrame({"id": [4], "dt": ["a"], "v": [4.0]})


def arrow(df):
    return pa.Table.from_pandas(df, schema=SPEC.arrow_schema(), preserve_index=False)


def tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def test_delete_dir_within(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep").write_text("x")
    os.symlink(outside, root / "link")
    for escape in (f"{root}/a/../../outside", f"{root}/link", f"{root}/a/..", str(root), f"{root}/../root"):
        with pytest.raises(storage.EscapeError, match="refusing to delete"):
            storage.delete_dir_within(str(root), escape)
    assert (outside / "keep").exists() and (root / "a" / "b").is_dir()
    storage.delete_dir_within(str(root), f"{root}/a/x/../b")
    assert not (root / "a" / "b").exists()
    assert not storage.within("s3://bucket/staging/db.t", "s3://bucket/staging/db.t/../db.u/x")
    assert storage.within("s3://bucket/staging/db.t", "s3://bucket/staging/db.t/./u/x")


def test_crafted_staging_uri_deletes_nothing_of_the_table(warehouse):
    """A staging URI whose parent resolves to the table directory: the clean-up of "abandoned staging" (its
    siblings) would delete the table's schema, snapshots and data."""
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(FIRST), run_id="first")
    spec = stage_run(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(SECOND), run_id="second")
    table_dir = get_table(opts, "db.t").table_path.replace("file://", "")
    shutil.copytree(spec.staging_uri, f"{table_dir}/{spec.commit_user}")
    before = tree(table_dir)
    crafted = f"{warehouse}/staging/db.t/../../db.db/t/{spec.commit_user}"
    with pytest.raises(storage.EscapeError, match="refusing to clean up"):  # also without a staging_root to hold it to
        run_commit(replace(spec, staging_uri=crafted, staging_root=None, staging_retention_seconds=0))
    assert tree(table_dir) == before
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([FIRST], "id"), "id")


def test_table_name_escaping_its_staging_is_refused_before_commit(warehouse):
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", SPEC)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), arrow(FIRST), run_id="first")
    root = f"{warehouse}/staging"
    evil = "x/../../db.db/t"  # staging_root/<table> resolves to the table's directory
    spec = CommitSpec(table=evil, catalog_options=opts, commit_user="u", commit_identifier=1, base_snapshot_id=1,
                      staging_uri=storage.join(root, evil, "u"), staging_root=root, staging_retention_seconds=0)
    table_dir = get_table(opts, "db.t").table_path.replace("file://", "")
    before = tree(table_dir)
    with pytest.raises(ValidationError, match="invalid table identifier"):
        run_commit(spec)
    assert tree(table_dir) == before
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([FIRST], "id"), "id")


def test_index_clean_up_never_follows_a_link_out(tmp_path):
    index, outside = tmp_path / "index" / "db.t", tmp_path / "outside"
    index.mkdir(parents=True)
    outside.mkdir()
    (outside / "precious").write_text("x")
    os.symlink(outside, index / "snapshot-0")
    (index / "snapshot-3").mkdir()
    (index / "snapshot-3" / "manifest.json").write_text(
        '{"table": "db.t", "snapshot_id": 3, "schema_id": 0, "shards": 1, "key_hash_scheme": "x", '
        '"shard_meta": [{"shard": 0, "files": [], "keys": 0, "bucket_counts": {}}], "origin": "committed"}')
    (index / "snapshot-1").mkdir()
    with pytest.raises(storage.EscapeError):
        clean_up(str(index), keep=1)
    assert (outside / "precious").exists()


def test_old_result_files_of_the_dag_are_dropped(tmp_path):
    from airflow_paimon.engine.runs.commit import drop_old_results

    results = tmp_path / "results"
    old_run, new_run, other_dag = results / "dag" / "run-1", results / "dag" / "run-2", results / "other" / "run-1"
    for d in (old_run, new_run, other_dag):
        d.mkdir(parents=True)
        (d / "commit-0-try1.json").write_text("{}")
    for f in (old_run / "commit-0-try1.json", other_dag / "commit-0-try1.json"):
        os.utime(f, (1, 1))
    drop_old_results(str(new_run / "commit-0-try2.json"), retention_seconds=3600)
    assert not old_run.exists() and (new_run / "commit-0-try1.json").exists()
    assert (other_dag / "commit-0-try1.json").exists()  # another DAG's results are not this commit's to drop


def test_a_result_uri_outside_the_results_layout_deletes_nothing(tmp_path):
    """A job run by hand with its result file in some folder: that folder's files and other folders stay."""
    from airflow_paimon.engine.runs.commit import drop_old_results

    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "notes.txt").write_text("keep")
    (work / "data" / "part-0.parquet").write_text("keep")
    (work / "data" / "old.json").write_text("{}")
    for f in (work / "notes.txt", work / "data" / "part-0.parquet", work / "data" / "old.json"):
        os.utime(f, (1, 1))
    (work / "out").mkdir()
    drop_old_results(str(work / "out" / "result.json"), retention_seconds=3600)
    assert (work / "notes.txt").exists() and (work / "data" / "part-0.parquet").exists()
    assert (work / "data" / "old.json").exists()  # a folder with non-result files is not a run directory
