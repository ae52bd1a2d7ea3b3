"""Two processes change one table's schema at the same moment, round after round (each adds its own column,
as PaimonAlterTableOperator and schema_evolution="add_columns" do): both changes land, in two schemas with
consecutive ids, on a local path and on S3 (a moto server on loopback). pypaimon's own schema commit checks
that ``schema-N`` is absent and then renames onto it, so the second process replaced the first one's schema and
its column was lost while both were told they succeeded."""
import multiprocessing as mp

import pytest

from airflow_paimon.engine.lifecycle import alter_table
from airflow_paimon.engine.table import TableSpec, get_or_create_table, get_table

ROUNDS = 8
SPEC = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["v", "DOUBLE"]], "primary_keys": ["id"],
                            "options": {"bucket": "1"}})


@pytest.fixture(params=["path", pytest.param("s3", marks=pytest.mark.s3)])
def catalog_options(request, tmp_path):
    if request.param == "s3":
        return request.getfixturevalue("s3_catalog_options")
    return {"warehouse": str(tmp_path / "warehouse")}


def changer(opts, w, aligned, out):
    """One process for all rounds (spawned once: no fork of a parent full of threads)."""
    for rnd in range(ROUNDS):
        aligned.wait(timeout=60)
        try:
            result = alter_table(opts, "db.t", add_columns=[[f"c{rnd}_{w}", "STRING"]])
            out.put((rnd, w, result["schema_id"], None))
        except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
            out.put((rnd, w, None, repr(e)))


def test_two_processes_adding_columns_at_once_both_land(catalog_options):
    get_or_create_table(catalog_options, "db.t", SPEC)
    mpc = mp.get_context("spawn")
    aligned, out = mpc.Barrier(2), mpc.Queue()
    procs = [mpc.Process(target=changer, args=(catalog_options, w, aligned, out)) for w in (0, 1)]
    for p in procs:
        p.start()
    try:
        results = [out.get(timeout=120) for _ in range(2 * ROUNDS)]
    finally:
        for p in procs:
            p.join(timeout=60)
    assert [r for r in results if r[3]] == []
    table = get_table(catalog_options, "db.t")
    expected = ["id", "v"] + [f"c{rnd}_{w}" for rnd in range(ROUNDS) for w in (0, 1)]
    assert sorted(f.name for f in table.table_schema.fields) == sorted(expected)  # no change lost
    assert sorted(r[2] for r in results) == list(range(1, 2 * ROUNDS + 1))  # one schema each, ids consecutive
    assert [s.id for s in table.schema_manager.list_all()] == list(range(0, 2 * ROUNDS + 1))
