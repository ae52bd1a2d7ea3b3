"""The whole DAG on an object-store warehouse (``s3://bucket/warehouse`` on moto's S3-compatible server on
loopback): table, index, staging and result files all go through the credentials and endpoint of the
``paimon`` connection's catalog_options — the process environment carries no AWS_* variable."""
from __future__ import annotations

import json
import os

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.table.table import get_table
from dag.dagrun import run_dag
from oracle import assert_table_equals, expected_upsert

pytestmark = [pytest.mark.dag, pytest.mark.s3, pytest.mark.usefixtures("on_spark_connect")]

BUCKET = "lake"  # the s3_catalog_options fixture's (tests/conftest.py)


def test_whole_dag_on_s3_with_the_connections_credentials(airflow_home, s3_catalog_options, monkeypatch, tmp_path):
    assert not [n for n in os.environ if n.startswith("AWS_")]
    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_DEFAULT", json.dumps(
        {"conn_type": "paimon", "extra": {"warehouse": s3_catalog_options["warehouse"],
                                          "catalog_options": s3_catalog_options}}))
    first = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6], "dt": list("aabbcc"), "v": [1.0, 2, 3, 4, 5, 6]})
    second = pd.DataFrame({"id": [2, 3, 7, 8], "dt": list("cacb"), "v": [20.0, 30, 70, 80]})
    sources = []
    for i, batch in enumerate((first, second)):  # the landing files stay local; the warehouse is on S3
        sources.append(str(tmp_path / f"batch{i}.parquet"))
        batch.to_parquet(sources[-1], index=False)
    from paimon_compact_dags import compact_dag
    from paimon_test_dags import seed

    run, states, xcoms = run_dag(seed, conf={"source": sources[0]})
    assert run.state == "success", states
    run, states, xcoms = run_dag(compact_dag, conf={"source": sources[1]})
    assert run.state == "success", states
    assert xcoms["assign_and_write"]["moved_keys"] == 2
    assert xcoms["commit"]["snapshot_id"] == 2 and xcoms["compact"]["snapshot_id"] == 3
    assert xcoms["expire_snapshots"]["expired_snapshots"] == 1
    assert xcoms["remove_orphan_files"]["orphan_files"] == 0
    assert xcoms["bootstrap_index"]["index_uri"].startswith(f"s3://{BUCKET}/warehouse/")

    # everything the provider wrote is in the bucket: index shards and manifest, result files
    fs, _ = storage.filesystem(f"s3://{BUCKET}/")
    keys = [f.path for f in fs.get_file_info(pa.fs.FileSelector(f"{BUCKET}/warehouse/.airflow-paimon",
                                                                recursive=True))]
    assert any(k.endswith("manifest.json") for k in keys) and any(k.endswith(".sst") for k in keys), keys
    assert any("/results/test_compact/" in k for k in keys), keys

    expected = expected_upsert([first, second], "id")
    table = get_table(s3_catalog_options, "db.t")
    assert_table_equals(table, expected, "id")
    from pypaimon_rust.datafusion import SQLContext

    ctx = SQLContext()
    o = s3_catalog_options  # pypaimon-rust (OpenDAL) names the same settings its own way
    ctx.register_catalog("p", {"warehouse": o["warehouse"], "s3.endpoint": o["fs.s3.endpoint"],
                               "s3.access-key-id": o["fs.s3.accessKeyId"], "s3.access-key": o["fs.s3.accessKeyId"],
                               "s3.secret-access-key": o["fs.s3.accessKeySecret"],
                               "s3.secret-key": o["fs.s3.accessKeySecret"], "s3.region": o["fs.s3.region"],
                               "s3.path-style-access": "true"})
    ctx.set_current_catalog("p")
    rust = pa.Table.from_batches(ctx.sql("SELECT * FROM db.t")).to_pandas()
    assert not rust["id"].duplicated().any()
    pd.testing.assert_frame_equal(rust[list(expected.columns)].sort_values("id").reset_index(drop=True),
                                  expected.reset_index(drop=True), check_dtype=False)
