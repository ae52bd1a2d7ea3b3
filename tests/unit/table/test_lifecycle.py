"""The lifecycle engine (engine/table/lifecycle.py, engine/maintenance/rollback.py) on a real warehouse: writes
through the engine (tests/local_runner.py), reads back with pypaimon against a pandas oracle and with Java Paimon."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.index.layout import read_manifest
from airflow_paimon.engine.table.lifecycle import alter_table, create_table, create_tag
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.maintenance.rollback import rollback
from airflow_paimon.engine.table.table import TableSpec, get_table
from java_paimon import assert_java_reads_as_pypaimon, missing
from lifecycle_tables import AFTER, RUNS, SCHEMA, SPEC, write
from local_runner import bootstrap, bootstrap_result, upsert
from oracle import assert_table_equals, expected_upsert, read_table

java = pytest.mark.skipif(missing() is not None, reason=str(missing()))


def schema_files(warehouse) -> list[str]:
    return sorted(p.name for p in (Path(warehouse) / "db.db" / "t" / "schema").iterdir())


def test_create_is_idempotent_and_refuses_another_schema(opts, warehouse):
    assert create_table(opts, "db.t", SPEC) == {"table": "db.t", "created": True, "schema_id": 0}
    assert create_table(opts, "db.t", SPEC) == {"table": "db.t", "created": False, "schema_id": 0}
    other = TableSpec.from_dict({**SCHEMA, "columns": [*SCHEMA["columns"], ["x", "INT"]]})
    with pytest.raises(ValidationError, match=r"table db\.t: existing table differs.*columns"):
        create_table(opts, "db.t", other)
    bad = TableSpec.from_dict({**SCHEMA, "options": {"bucket": "-1", "changelog-producer": "full-compaction",
                                                     "deletion-vectors.enabled": "true"}})
    with pytest.raises(ValidationError, match="option 'changelog-producer'"):
        create_table(opts, "db.u", bad)
    assert schema_files(warehouse) == ["schema-0"]


def test_alter_adds_widens_and_sets_once(opts, warehouse, index_root):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:1])
    alter = dict(set_options={"snapshot.num-retained.min": "5"}, add_columns=[["note", "STRING"]],
                 widen_columns=[["v", "DOUBLE"]])
    first = alter_table(opts, "db.t", **alter)
    assert first["changed"] and first["schema_id"] == 1
    assert first["changes"] == ["set snapshot.num-retained.min=5", "add column note STRING"]
    again = alter_table(opts, "db.t", **alter)  # a retry: the table has it all
    assert again == {"table": "db.t", "schema_id": 1, "changed": False, "changes": []}
    assert schema_files(warehouse) == ["schema-0", "schema-1"]
    table = get_table(opts, "db.t")
    assert [f.name for f in table.table_schema.fields] == ["id", "dt", "v", "note"]
    assert table.table_schema.options["snapshot.num-retained.min"] == "5"
    rows = read_table(table)  # rows written before the ALTER read with the new column empty
    assert rows["note"].isna().all() and sorted(rows["id"]) == [1, 2, 3, 4]


def test_alter_widens_int_to_bigint_and_old_rows_read(opts):
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["n", "INT"], ["s", "VARCHAR(4)"]],
                                "primary_keys": ["id"], "options": {"bucket": "1"}})
    create_table(opts, "db.w", spec)
    table = get_table(opts, "db.w")
    builder = table.new_batch_write_builder()
    w = builder.new_write()
    w.write_arrow(pa.Table.from_pydict({"id": [1, 2], "n": [7, None], "s": ["ab", "cd"]}, schema=spec.arrow_schema()))
    builder.new_commit().commit(w.prepare_commit())
    w.close()
    result = alter_table(opts, "db.w", widen_columns=[["n", "BIGINT"], ["s", "STRING"]])
    assert result["changes"] == ["widen column n to BIGINT", "widen column s to STRING"]
    table = get_table(opts, "db.w")
    assert [str(f.type) for f in table.table_schema.fields][1:] == ["BIGINT", "STRING"]
    assert read_table(table).sort_values("id")["n"].tolist()[0] == 7


@pytest.mark.parametrize("changes,match", [
    ({"set_options": {"changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"}},
     "option 'changelog-producer'"),
    ({"set_options": {"bucket": "4"}}, "option 'bucket'.*cannot be changed"),
    ({"set_options": {"merge-engine": "first-row"}}, "option 'merge-engine'"),
    ({"set_options": {"target-file-size": "lots"}}, "option 'target-file-size'.*memory size"),
    ({"add_columns": [["x", "INT NOT NULL"]]}, "column 'x'.*nullable"),
    ({"add_columns": [["x", "NOPE"]]}, "column 'x'.*unknown Paimon type"),
    ({"widen_columns": [["v", "FLOAT"]]}, "column 'v'.*cannot change type DOUBLE to FLOAT"),
    ({"widen_columns": [["id", "DECIMAL(20,0)"]]}, "column 'id'.*primary-key"),
])
def test_alter_refusals_change_nothing(opts, warehouse, changes, match):
    create_table(opts, "db.t", SPEC)
    with pytest.raises(ValidationError, match=r"table db\.t, .*" + match):
        alter_table(opts, "db.t", **changes)
    assert schema_files(warehouse) == ["schema-0"]


def test_tag_is_idempotent_and_refuses_the_name_on_another_snapshot(opts, warehouse, index_root):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:2])
    assert create_tag(opts, "db.t", "2026-01-01", 1) == {"table": "db.t", "tag": "2026-01-01", "snapshot_id": 1,
                                                         "created": True}
    assert create_tag(opts, "db.t", "2026-01-01", 1)["created"] is False
    with pytest.raises(ValidationError, match="value '2026-01-01'.*tag exists on snapshot 1, not on snapshot 2"):
        create_tag(opts, "db.t", "2026-01-01")  # latest: 2
    for bad in ("12", "../x", "a b"):
        with pytest.raises(ValidationError, match="tag name"):
            create_tag(opts, "db.t", bad)
    with pytest.raises(ValidationError, match="snapshot 9 does not exist"):
        create_tag(opts, "db.t", "later", 9)
    tag_file = Path(warehouse) / "db.db" / "t" / "tag" / "tag-2026-01-01"
    assert json.loads(tag_file.read_text())["id"] == 1  # Paimon's layout: the snapshot's JSON
    tagged = get_table(opts, "db.t").copy({"scan.tag-name": "2026-01-01"})
    assert_table_equals(tagged, expected_upsert(RUNS[:1], "id"), "id")


def test_rollback_drops_later_indexes_so_a_new_snapshot_never_meets_a_stale_one(opts, index_root):
    """3 runs, rollback to 1, two more runs: the new snapshot 2 must not be matched with the old snapshot 2's
    index (which lacks key 100): the second new run moves key 100 to another partition, and with the stale index
    it would be inserted there without being deleted where it is — twice in the table."""
    create_table(opts, "db.t", SPEC)
    assert write(opts, index_root, RUNS) == [1, 2, 3]
    index_uri = layout.index_dir(index_root, "db.t")
    stale = read_manifest(index_uri, 2)
    assert stale is not None
    result = rollback(opts, "db.t", index_root, to_snapshot=1)
    assert result == {"table": "db.t", "snapshot_id": 1, "deleted_snapshots": [2, 3], "deleted_tags": [],
                      "deleted_index_snapshots": [2, 3]}
    assert rollback(opts, "db.t", index_root, to_snapshot=1)["deleted_snapshots"] == []  # a retry: nothing left
    assert_table_equals(get_table(opts, "db.t"), expected_upsert(RUNS[:1], "id"), "id")

    boot = bootstrap_result(opts, "db.t", index_root, 2)
    # snapshot 1's own index is still there (published within the hour: index/store.py KEEP_SECONDS) and its own
    assert boot.base_snapshot_id == 1 and boot.index_decision == "reused"
    assert write(opts, index_root, AFTER, first=3) == [2, 3]
    fresh = read_manifest(index_uri, 2)
    assert fresh.keys == len(expected_upsert([RUNS[0], AFTER[0]], "id"))
    base = {f.path for f in read_manifest(index_uri, 1).files()}  # snapshot 1's index, which both build on
    assert ({f.path for f in fresh.files()} - base).isdisjoint(f.path for f in stale.files())  # not the old index
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([RUNS[0], *AFTER], "id"), "id")


@java
@pytest.mark.slow
def test_java_reads_the_rolled_back_table(opts, warehouse, index_root):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS)
    rollback(opts, "db.t", index_root, to_snapshot=2)
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])
    write(opts, index_root, AFTER[:1], first=3)
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([*RUNS[:2], AFTER[0]], "id"), "id")


def test_rollback_to_a_tag_whose_snapshot_expired(opts, warehouse, index_root):
    """Expiry keeps what a tag needs; rolling back to the tag writes its snapshot back as the only one."""
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:1])
    create_tag(opts, "db.t", "first", 1)
    write(opts, index_root, RUNS[1:], first=1)
    expired = expire_snapshots(get_table(opts, "db.t"), TableOptions.parse("db.t", {
        "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}).expire)
    assert expired.earliest_snapshot_id == 3
    tagged = get_table(opts, "db.t").copy({"scan.tag-name": "first"})
    assert_table_equals(tagged, expected_upsert(RUNS[:1], "id"), "id")  # the tag still reads
    result = rollback(opts, "db.t", index_root, to_tag="first")
    assert (result["snapshot_id"], result["deleted_snapshots"]) == (1, [3])
    table = get_table(opts, "db.t")
    assert table.snapshot_manager().try_get_earliest_snapshot().id == 1
    assert_table_equals(table, expected_upsert(RUNS[:1], "id"), "id")
    write(opts, index_root, AFTER, first=3)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([RUNS[0], *AFTER], "id"), "id")


def test_rollback_deletes_later_tags_and_refuses_unknown_targets(opts, index_root):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS)
    create_tag(opts, "db.t", "two", 2)
    create_tag(opts, "db.t", "three", 3)
    assert rollback(opts, "db.t", index_root, to_tag="two")["deleted_tags"] == ["three"]
    assert get_table(opts, "db.t").list_tags() == ["two"]
    with pytest.raises(ValidationError, match="value 'nope'.*no such tag"):
        rollback(opts, "db.t", index_root, to_tag="nope")
    with pytest.raises(ValidationError, match="value 3.*no such snapshot"):
        rollback(opts, "db.t", index_root, to_snapshot=3)


def test_a_write_after_alter_in_the_same_worker_keeps_the_new_column(opts, index_root):
    create_table(opts, "db.t", SPEC)
    write(opts, index_root, RUNS[:1])  # opens (and caches) the table handle in this process
    alter_table(opts, "db.t", add_columns=[["note", "STRING"]])
    after = pd.DataFrame({"id": [2, 9], "dt": ["b", "a"], "v": [3.0, 9.0], "note": ["x", "y"]})
    upsert(bootstrap(opts, "db.t", index_root, 2), pa.Table.from_pandas(after, preserve_index=False), run_id="n")
    start = expected_upsert(RUNS[:1], "id").assign(note=None)
    assert_table_equals(get_table(opts, "db.t"), expected_upsert([after], "id", start=start), "id")


def test_deletion_vectors_turn_on_only_without_level_0_files(warehouse):
    """Turning deletion vectors on would hide every level-0 file from readers: refused until a full compaction
    has lifted them, then allowed, and the next writes keep the table readable."""
    from local_runner import compact

    opts = {"warehouse": warehouse}
    spec = TableSpec.from_dict({**SCHEMA, "options": {"bucket": "-1"}})
    create_table(opts, "db.t", spec)
    first = pd.DataFrame({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]})
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), pa.Table.from_pandas(
        first, schema=spec.arrow_schema(), preserve_index=False), "r0")
    with pytest.raises(ValidationError, match="option 'deletion-vectors.enabled'.*level 0"):
        alter_table(opts, "db.t", set_options={"deletion-vectors.enabled": "true"})
    assert schema_files(warehouse) == ["schema-0"]
    compact(get_table(opts, "db.t"), full=True, scope="table")
    alter_table(opts, "db.t", set_options={"deletion-vectors.enabled": "true"})
    second = pd.DataFrame({"id": [2, 4], "dt": ["b", "a"], "v": [5.0, 6.0]})  # 2 moves partition
    upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2), pa.Table.from_pandas(
        second, schema=spec.arrow_schema(), preserve_index=False), "r1")
    expected = pd.concat([first, second]).drop_duplicates("id", keep="last").sort_values("id")
    assert_table_equals(get_table(opts, "db.t"), expected, "id")
