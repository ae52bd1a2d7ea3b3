"""Two processes change one table's schema at the same moment, round after round (each adds its own column,
as PaimonAlterTableOperator and schema_evolution="add_columns" do): both changes land, in two schemas with
consecutive ids, on a local path and on S3 (a moto server on loopback). pypaimon's own schema commit checks
that ``schema-N`` is absent and then renames onto it, so the second process replaced the first one's schema and
its column was lost while both were told they succeeded."""
import multiprocessing as mp

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.table.lifecycle import alter_table
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from local_runner import bootstrap, upsert
from oracle import assert_table_equals, expected_upsert, in_commit_order
from processes import SPAWN, running

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


@pytest.mark.slow
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


# --- two evolving writes racing: DAG runs with schema_evolution="add_columns", each bringing its own column ------

WRITE_ROUNDS, KEYS = 3, 30


def batch(rnd: int, w: int) -> pd.DataFrame:
    """Writer ``w``'s source in round ``rnd``: the columns of earlier rounds (both writers'), and its new one."""
    rng = np.random.default_rng(rnd * 2 + w)
    frame = pd.DataFrame({"id": rng.choice(KEYS, 10, replace=False), "v": rng.random(10)})
    for column in [f"c{r}_{x}" for r in range(rnd) for x in (0, 1)] + [f"c{rnd}_{w}"]:
        frame[column] = rng.random(10)
    return frame


def evolving_writer(opts, w, aligned, next_round, out):
    """One DAG run per round, bootstrapped with the other writer at one snapshot; both plan their schema on
    the same one before either creates it (the wrapped create below), so one loses the schema race, and
    one of them loses the snapshot commit and re-runs (bootstrap again, same DAG run) as an Airflow retry would."""
    from airflow_paimon.engine.files import storage

    create, pending = storage.write_bytes_if_absent, [False]

    def create_after_both_planned(uri, data):
        if pending[0] and "/schema/schema-" in uri:
            pending[0] = False
            aligned.wait(timeout=60)
        return create(uri, data)

    storage.write_bytes_if_absent = create_after_both_planned  # this spawned process only
    index_root = opts["warehouse"] + "/.index"
    for rnd in range(WRITE_ROUNDS):
        data = pa.Table.from_pandas(batch(rnd, w), preserve_index=False)
        run = bootstrap(opts, "db.t", index_root, 2)
        aligned.wait(timeout=60)
        pending[0] = True
        try:
            result = ("won", upsert(run, data, run_id=f"{rnd}-{w}", schema_evolution="add_columns")[0])
        except StaleIndexError:
            result = None
        except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
            result = ("failed", repr(e))
        aligned.wait(timeout=60)
        if result is None:
            result = ("refused", upsert(bootstrap(opts, "db.t", index_root, 2), data, run_id=f"{rnd}-{w}",
                                        schema_evolution="add_columns")[0])
        out.put((w, *result))
        next_round.wait(timeout=60)


@pytest.mark.slow
def test_two_evolving_writes_racing_both_land_with_both_columns(tmp_path):
    opts = {"warehouse": str(tmp_path / "warehouse")}
    get_or_create_table(opts, "db.t", SPEC)
    aligned, next_round, out = SPAWN.Barrier(2), SPAWN.Barrier(3), SPAWN.Queue()
    with running(evolving_writer, [(opts, w, aligned, next_round, out) for w in (0, 1)]) as procs:
        for rnd in range(WRITE_ROUNDS):
            results = sorted(out.get(timeout=120) for _ in procs)
            assert sorted(r[1] for r in results) == ["refused", "won"], results  # the loser's re-run landed
            table = get_table(opts, "db.t")
            # neither column lost: each writer's change is one schema of its own, on top of the other's
            assert sorted(f.name for f in table.table_schema.fields) == sorted(
                ["id", "v"] + [f"c{r}_{x}" for r in range(rnd + 1) for x in (0, 1)])
            assert [s.id for s in table.schema_manager.list_all()] == list(range(2 * rnd + 3))
            # in the order the snapshots landed; a column a batch lacks is null for its rows
            batches = in_commit_order(table, {f"{r}-{w}": batch(r, w) for r in range(rnd + 1) for w in (0, 1)})
            assert_table_equals(table, expected_upsert(batches, "id"), "id")
            next_round.wait(timeout=60)
