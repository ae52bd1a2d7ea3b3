"""The job specs and results on the wire: a JSON round trip gives the same object, and a spec with a missing or
an unknown key is refused by name — by the job frame too, before the job runs, with the error in the result
file and no secret in it."""
from __future__ import annotations

import json

import pytest

from airflow_paimon.engine.jobs.specs import (AssignWriteResult, AssignWriteSpec, BootstrapResult, BootstrapSpec,
                                         CommitResult, CommitSpec, CompactResult, CompactSpec, ExpireResult,
                                         ExpireSpec, OrphansResult, OrphansSpec, SpecError)
from airflow_paimon.spark import job_frame

COMMON = {"catalog_options": {"warehouse": "/w", "fs.s3.secret-key": "s3cr3t-value"}, "table": "db.t"}
EXAMPLES = [
    BootstrapSpec(**COMMON, shards=4, index_root="/w/.index",
                  table_spec={"columns": [["id", "BIGINT"]], "primary_keys": ["id"]}, schema_evolution="widen"),
    BootstrapResult(table="db.t", shards=4, base_snapshot_id=3, index_uri="/w/.index/db.t", keys=10, reused=False,
                    index_decision="caught_up", reason="1 files appended since the index", data_files_read=1),
    AssignWriteSpec(**COMMON, shuffle_partitions=16, source={"path": "/in.parquet", "format": "parquet"},
                    base_snapshot_id=None, index_uri=None, shards=2, staging_root="/w/.staging", dag_id="d",
                    run_id="manual__1", row_kind_column="op", schema_evolution="add_columns"),
    AssignWriteResult(table="db.t", base_snapshot_id=3, commit_user="u", commit_identifier=7,
                      staging_uri="/w/.staging/db.t/u", rows_in=5, rows_written=4, deletes=1, moved_keys=2, files=3,
                      already_committed=False),
    CommitSpec(**COMMON, staging_uri="/w/.staging/db.t/u", commit_user="u", commit_identifier=7, base_snapshot_id=3,
               staging_root="/w/.staging", staging_retention_seconds=60.0),
    CommitResult(table="db.t", snapshot_id=4, base_snapshot_id=3, already_committed=True),
    CompactSpec(**COMMON, dag_id="d", run_id="r", snapshot_id=4, full=True, scope="table",
                partition_filter={"dt": "2026-11-01"}),
    CompactResult(table="db.t", snapshot_id=5, compacted_buckets=2, files_before=6, files_after=2,
                  already_committed=False),
    ExpireSpec(**COMMON, options={"snapshot.num-retained.min": 2}, dry_run=True),
    ExpireResult(table="db.t", expired_snapshots=1, deleted_data_files=2, deleted_metadata_files=3,
                 earliest_snapshot_id=2, dry_run=False),
    OrphansSpec(**COMMON, older_than_ms=0, staging_root="/w/.staging"),
    OrphansResult(table="db.t", orphan_files=1, orphan_bytes=42, stale_staging_dirs=0, dry_run=True,
                  sample=["/w/db.db/t/x.parquet"]),
]


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_round_trip_through_json(value):
    wire = json.loads(json.dumps(value.to_dict()))
    assert type(value).from_dict(wire) == value


def test_defaults_fill_optional_keys():
    spec = CommitSpec.from_dict({**COMMON, "staging_uri": "s", "commit_user": "u", "commit_identifier": 1,
                                 "base_snapshot_id": None})
    assert spec.staging_root is None and spec.result_uri is None and spec.staging_retention_seconds == 7 * 86400


def test_specs_of_an_operator_before_schema_evolution_still_load():
    old_write = {k: v for k, v in EXAMPLES[2].to_dict().items() if k != "schema_evolution"}
    old_bootstrap = {k: v for k, v in EXAMPLES[0].to_dict().items() if k != "schema_evolution"}
    assert AssignWriteSpec.from_dict(old_write).schema_evolution == "none"
    assert BootstrapSpec.from_dict(old_bootstrap).schema_evolution == "none"


def test_missing_key_is_named():
    wire = EXAMPLES[2].to_dict()
    del wire["staging_root"], wire["shards"]
    with pytest.raises(SpecError, match=r"assign-and-write spec for table db\.t: missing keys \['shards', "
                                        r"'staging_root'\]"):
        AssignWriteSpec.from_dict(wire)


def test_unknown_key_is_named():
    wire = {**EXAMPLES[1].to_dict(), "path": "rebuilt"}  # the bootstrap decision's old XCom key
    with pytest.raises(SpecError, match=r"bootstrap-index result for table db\.t: unknown keys \['path'\]"):
        BootstrapResult.from_dict(wire)


def test_not_an_object_is_refused():
    with pytest.raises(SpecError, match="commit spec: expected a JSON object, got list"):
        CommitSpec.from_dict([])


def test_commit_spec_after_assign_and_write():
    written = EXAMPLES[3]
    spec = CommitSpec.after(written, **COMMON, staging_root="/w/.staging")
    assert (spec.staging_uri, spec.commit_user, spec.commit_identifier, spec.base_snapshot_id) == (
        written.staging_uri, written.commit_user, written.commit_identifier, written.base_snapshot_id)


def test_job_frame_refuses_a_bad_spec_before_running(tmp_path):
    """The job frame reads the spec file as its type: an unknown key fails the job before ``job`` is called;
    the error lands in the result file, the secret does not, and the spec file is gone."""
    spec_path, result = tmp_path / "spec.json", tmp_path / "result.json"
    spec_path.write_text(json.dumps({**EXAMPLES[10].to_dict(), "older_than": "1d"}))
    called = []
    with pytest.raises(SystemExit) as exit_:
        job_frame.run(lambda spec: called.append(spec), OrphansSpec,
                ["--spec-file", str(spec_path), "--result-uri", str(result)])
    assert exit_.value.code == 1 and called == [] and not spec_path.exists()
    error = json.loads(result.read_text())["error"]
    assert error == "SpecError: remove-orphan-files spec for table db.t: unknown keys ['older_than']"


def test_job_frame_hands_the_typed_spec_and_writes_the_result(tmp_path):
    spec_path, result = tmp_path / "spec.json", tmp_path / "result.json"
    spec_path.write_text(json.dumps(EXAMPLES[8].to_dict()))
    expected = EXAMPLES[9]
    seen = []
    job_frame.run(lambda spec: seen.append(spec) or expected, ExpireSpec,
            ["--spec-file", str(spec_path), "--result-uri", str(result)])
    assert seen == [EXAMPLES[8]]
    assert ExpireResult.from_dict(json.loads(result.read_text())) == expected
