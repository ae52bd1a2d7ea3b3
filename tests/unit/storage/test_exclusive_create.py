"""storage.write_bytes_if_absent (snapshot files, index manifests): of any number of racing creators exactly
one is told it created the file, and the file holds its bytes — on a local path, a file:// URI and S3 (moto
on loopback, a conditional PUT). A store without a conditional create is refused, and so is a commit there."""
import threading

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert

RACERS, KEYS = 6, 15


def race(uri: str) -> list[tuple[bytes, bool]]:
    """RACERS threads create ``uri`` at once, each with its own bytes: (bytes, told it created) of each."""
    start, results = threading.Barrier(RACERS), [None] * RACERS

    def create(i):
        data = f"creator {i} of {uri}".encode()
        start.wait(timeout=30)
        results[i] = (data, storage.write_bytes_if_absent(uri, data))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


@pytest.fixture(params=["path", "file-uri", pytest.param("s3", marks=pytest.mark.s3)])
def root(request, tmp_path):
    if request.param == "s3":
        storage.configure(request.getfixturevalue("s3_catalog_options"))
        return "s3://lake/race"
    return (tmp_path / "race").as_uri() if request.param == "file-uri" else str(tmp_path / "race")


@pytest.mark.slow
def test_exactly_one_creator_wins(root):
    for k in range(KEYS):
        uri = storage.join(root, f"snapshot-{k}", "manifest.json")
        results = race(uri)
        winners = [data for data, created in results if created]
        assert len(winners) == 1, (uri, results)
        assert storage.read_bytes(uri) == winners[0]  # nobody replaced the winner's file
        assert not storage.write_bytes_if_absent(uri, b"late")  # and a late creator is told it exists
    assert not [n for n in storage.list_dir(storage.join(root, "snapshot-0")) if n != "manifest.json"]  # no tmp


@pytest.mark.parametrize("uri", ["gs://lake/t/snapshot/snapshot-1", "oss://lake/t/snapshot/snapshot-1",
                                 "hdfs://namenode:8020/t/snapshot/snapshot-1"])
def test_a_store_without_conditional_create_is_refused(uri):
    with pytest.raises(storage.NoExclusiveCreateError, match="create-if-absent"):
        storage.write_bytes_if_absent(uri, b"{}")


def test_a_commit_that_cannot_create_its_snapshot_exclusively_fails(warehouse, monkeypatch):
    """A table on a store without a conditional create (here: a local warehouse whose store is declared
    without one) fails its commit with a clear error and commits nothing, never reports success."""
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"],
                                "options": {"bucket": "2"}})
    opts = {"warehouse": warehouse}
    first = pd.DataFrame({"id": [1, 2, 3], "v": [1.0, 2.0, 3.0]})
    get_or_create_table(opts, "db.t", spec)
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), pa.Table.from_pandas(first, preserve_index=False))

    monkeypatch.setattr(storage, "creates_exclusively", lambda uri: False)
    second = pa.Table.from_pandas(pd.DataFrame({"id": [3, 4], "v": [30.0, 40.0]}), preserve_index=False)
    with pytest.raises(ValidationError, match="cannot be created exclusively") as e:
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), second, run_id="second")
    assert "db.t" in str(e.value) and "nothing committed" in str(e.value)
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().id == 1
    assert_table_equals(table, expected_upsert([first], "id"), "id")
