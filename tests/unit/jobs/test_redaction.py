"""Secrets of the catalog options are redacted from the job's log and error, and only there: an option is a
secret by the words of its name (a token, not its provider), and the result's fields are written as the job
returned them."""
from __future__ import annotations

import json
import logging

import pytest

from airflow_paimon.engine.jobs.specs import BootstrapResult, BootstrapSpec
from airflow_paimon.handoff import secrets_of
from airflow_paimon.spark.job_frame import JobRun, execute_job


@pytest.mark.parametrize("name", [
    "token", "fs.s3.secret-key", "fs.s3.access-key", "fs.s3a.session.token", "fs.oss.accessKeyId",
    "fs.oss.accessKeySecret", "fs.oss.securityToken", "dlf.access-key-id", "dlf.access-key-secret",
    "dlf.security-token", "fs.azure.account.key.acct.dfs.core.windows.net", "fs.azure.sas.fixed.token",
    "fs.azure.account.oauth2.client.secret", "header.Authorization", "jdbc.password", "ssl.key.password",
    "fs.gs.auth.service.account.private.key",
])
def test_secret_options(name):
    assert secrets_of({"catalog_options": {name: "v4lue"}}) == ["v4lue"]


@pytest.mark.parametrize("name", [
    "token.provider", "dlf.token-loader", "dlf.token-path", "fs.s3a.aws.credentials.provider",
    "fs.azure.account.auth.type", "fs.azure.sas.token.provider.type", "warehouse", "uri", "metastore",
    "dlf.region", "fs.s3.endpoint", "fs.s3.path-style-access", "table-default.bucket-key", "fs.s3a.keystore.type",
])
def test_options_that_name_or_locate_a_secret_are_not_secrets(name):
    assert secrets_of({"catalog_options": {name: "v4lue"}}) == []


OPTIONS = {"token.provider": "dlf", "token": "tK-91x", "fs.oss.accessKeySecret": "Qz"}


def _spec(warehouse: str) -> dict:
    return BootstrapSpec(catalog_options={"warehouse": warehouse, **OPTIONS}, table="db.t", shards=2,
                         index_root=f"{warehouse}/dlf-Qz/.index").to_dict()


def test_secrets_are_the_secret_options_values_longest_first(tmp_path):
    assert secrets_of(_spec(str(tmp_path))) == ["tK-91x", "Qz"]


def test_the_result_is_written_as_the_job_returned_it(tmp_path):
    """index_uri holds ``dlf`` (token.provider's value, no secret) and ``Qz`` (a secret's value, as a
    substring of a path): both stay; before, they came back as ``***-***``."""
    warehouse = str(tmp_path)
    result = BootstrapResult(table="db.t", shards=2, base_snapshot_id=3, index_uri=f"{warehouse}/dlf-Qz/.index/db.t",
                             keys=10, reused=False, index_decision="rebuilt", reason="no published index",
                             data_files_read=1)
    result_uri = str(tmp_path / "result.json")
    assert execute_job(lambda spec: result, BootstrapSpec, _spec(warehouse), JobRun(result_uri))
    assert BootstrapResult.from_dict(json.loads(open(result_uri).read())) == result


def test_the_error_and_the_log_carry_no_secret_and_keep_the_rest(tmp_path, caplog):
    def job(spec):
        raise RuntimeError(f"cannot open {spec.index_root} with token tK-91x")

    result_uri = str(tmp_path / "result.json")
    with caplog.at_level(logging.ERROR, logger="airflow_paimon.job"):
        assert not execute_job(job, BootstrapSpec, _spec(str(tmp_path)), JobRun(result_uri))
    error = json.loads(open(result_uri).read())["error"]
    assert error == f"RuntimeError: cannot open {tmp_path}/dlf-***/.index with token ***"
    assert "tK-91x" not in caplog.text and "with token ***" in caplog.text and "/dlf-***/" in caplog.text
