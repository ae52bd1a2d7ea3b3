"""The second shuffle's writer task (spark/pipelines/cross_partition.py write_places): a (partition, bucket)'s
parts come from several assign tasks, interleaved with other places' and split across Arrow batches; each place
is written once, from all its rows, and the task's spill files are gone when it ends."""
import os

import pyarrow as pa

from airflow_paimon.engine.assign.assigner import BUCKET
from airflow_paimon.spark.pipelines.cross_partition import PARTS_ARROW, bucket_part, write_places


def assigned(dt: str, bucket: int, ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "dt": [dt] * len(ids),
                     BUCKET: pa.array([bucket] * len(ids), pa.int32())})


def test_each_place_is_written_once_from_all_its_parts(tmp_path, monkeypatch):
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(local))
    # (dt, bucket, ids) in arrival order: place (a, 0) from three assign tasks, its parts apart
    pieces = [("a", 0, range(0, 5)), ("b", 1, range(5, 7)), ("a", 1, range(7, 9)), ("a", 0, range(9, 12)),
              ("b", 1, range(12, 20)), ("a", 0, range(20, 21))]
    parts = pa.concat_tables([bucket_part(assigned(*p), ["dt"]) for p in pieces]).combine_chunks()
    batches = [b for t in (parts.slice(0, 2), parts.slice(2, 3), parts.slice(5)) for b in t.to_batches()]
    assert len(batches) == 3 and parts.schema == PARTS_ARROW

    written = []

    def write(rows: pa.Table) -> pa.Table:
        written.append(rows)
        return pa.table({"rows": [rows.num_rows]})

    out = pa.Table.from_batches(list(write_places(write)(iter(batches))))

    places = {(t.column("dt")[0].as_py(), t.column(BUCKET)[0].as_py()): t for t in written}
    assert len(places) == len(written) == 3  # once per place
    for (dt, bucket), rows in places.items():
        want = sorted(i for d, b, ids in pieces if (d, b) == (dt, bucket) for i in ids)
        assert sorted(rows.column("id").to_pylist()) == want
        assert set(rows.column("dt").to_pylist()) == {dt} and set(rows.column(BUCKET).to_pylist()) == {bucket}
    assert out.column("rows").to_pylist() == [t.num_rows for t in written]
    assert os.listdir(local) == []  # the spilled parts removed with the task
