"""Java Paimon 1.0, the reference implementation, reads the tables this provider writes: the same rows as
pypaimon (and as the pandas oracle), no key twice — cross-partition upserts with moves and deletes, fixed
buckets, before and after compaction, and an older snapshot by time travel."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from compaction_tables import COLUMNS, batches, cross_partition_table, rust_read
from java_paimon import assert_java_reads_as_pypaimon, java_count, java_read, missing
from local_runner import bootstrap, compact, upsert
from oracle import assert_table_equals

pytestmark = [pytest.mark.java, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def test_cross_partition_upserts_then_compaction(warehouse):
    data = batches(4, seed=5)
    table, expected = cross_partition_table(warehouse, data)
    assert_table_equals(table, expected, "id")
    moved = set(data[0].id) & set(data[3].id)
    assert moved, "the batches share keys, so later batches update and move them"
    rows = assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])
    assert len(rows) == len(expected)
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"], snapshot_id=2)  # time travel to an older snapshot
    compact(get_table({"warehouse": warehouse}, "db.t"), full=True)
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])


def test_deletes_and_typed_columns(warehouse):
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["amount", "DECIMAL(10, 2)"],
                                            ["at", "TIMESTAMP(3)"], ["name", "VARCHAR(20)"]],
                                "primary_keys": ["id"], "partition_keys": ["dt"],
                                "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}})
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    import decimal

    def batch(ids, dt):
        return pd.DataFrame({"id": ids, "dt": [dt] * len(ids),
                             "amount": [decimal.Decimal(f"{i}.25") for i in ids],
                             "at": pd.to_datetime([1_700_000_000_000 + i for i in ids], unit="ms"),
                             "name": [f"n{i}" for i in ids]})

    first, second = batch(list(range(10)), "a"), batch([2, 3, 11], "b")
    for i, (frame, kinds) in enumerate(((first, None), (second, np.array([0, 3, 0], np.int8)))):  # 3: -D
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False),
               run_id=f"r{i}", row_kinds=kinds)
    rows = assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])
    assert sorted(rows.id) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 11]  # 3 deleted, 2 moved to b
    assert rows.set_index("id").loc[2, "dt"] == "b" and rows.set_index("id").loc[9, "amount"] == "9.25"
    assert sorted(rust_read(warehouse).id) == sorted(rows.id)  # and pypaimon-rust, the third reader


def test_fixed_bucket_table(warehouse):
    spec = TableSpec.from_dict({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]],
                                "primary_keys": ["id", "dt"], "partition_keys": ["dt"], "options": {"bucket": "3"}})
    opts = {"warehouse": warehouse}
    get_or_create_table(opts, "db.t", spec)
    data = [b.drop_duplicates(["id", "dt"]) for b in batches(3, seed=9)]
    for i, frame in enumerate(data):
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), run_id=f"r{i}")
    rows = assert_java_reads_as_pypaimon(warehouse, "db.t", ["id", "dt"])
    assert len(rows) == len(pd.concat(data).drop_duplicates(["id", "dt"]))


def test_a_tag_by_name(warehouse):
    """A tag made by PaimonCreateTagOperator's engine call: Java Paimon reads it by name (scan.tag-name) as the
    tagged snapshot, after later writes moved and updated its keys."""
    from airflow_paimon.engine.table.lifecycle import create_tag

    data = batches(3, seed=9)
    table, expected = cross_partition_table(warehouse, data[:1])
    create_tag({"warehouse": warehouse}, "db.t", "day-1")
    tagged = assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"], tag="day-1")
    assert len(tagged) == len(expected)
    schema = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": ["id"]}).arrow_schema()
    for i, batch in enumerate(data[1:]):
        upsert(bootstrap({"warehouse": warehouse}, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(batch, schema=schema, preserve_index=False), run_id=f"later-{i}")
    latest = assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"])
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"], tag="day-1")  # still the tagged state
    assert not latest.reset_index(drop=True).equals(tagged.reset_index(drop=True))


@pytest.mark.parametrize("shape", ["cross-partition", "fixed-bucket", "cross-partition-deletion-vectors"])
def test_changelog_producer_input(warehouse, shape):
    """Java Paimon's incremental read in changelog mode returns exactly the changelog the engine reads back (rows
    and row kinds) for each snapshot, and its batch read the table pypaimon reads. Over a range of several
    snapshots Java's batch read merges each bucket's changelog files by key (the last change of a key stays);
    the engine returns every change in commit order, which reduces to Java's."""
    from changelog_tables import CROSS, FIXED, changelog_of, soak, write_all

    spec = FIXED if shape == "fixed-bucket" else CROSS
    if shape.endswith("deletion-vectors"):  # the changelog is the input; the data files hold merged rows
        spec = TableSpec.from_dict({**CROSS.to_dict(), "options": {**CROSS.to_dict()["options"],
                                                                    "deletion-vectors.enabled": "true"}})
    snapshots = write_all(warehouse, spec, soak(seed=7, n_batches=3))
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["dt", "id"] if spec is FIXED else ["id"])
    order = ["dt", "id", "row_kind", "v"]
    for start, end in ((0, snapshots[0]), (snapshots[0], snapshots[1]), (snapshots[0], snapshots[-1])):
        ours = changelog_of(table, start, end)
        # Java 1.0's batch scan of a deletion-vector table skips level 0, where changelog files always are (its own
        # writers' too): the changelog is read with the option off, which changes nothing else for this read
        java = java_read(warehouse, "db.t", incremental=(start, end, "changelog"),
                         options={"deletion-vectors.enabled": "false"} if shape.endswith("vectors") else None
                         ).rename(columns={"_row_kind": "row_kind"})
        assert set(ours.row_kind) == ({"+I"} if start == 0 else {"+I", "-D"})
        with_changelog = [sid for sid in range(start + 1, end + 1)
                          if table.snapshot_manager().get_snapshot_by_id(sid).changelog_manifest_list]
        if len(with_changelog) > 1:  # (a deletion-vector write is two snapshots, its changelog in the first)
            assert ours.duplicated(["dt", "id"]).any()
            ours = ours.drop_duplicates(["dt", "id"], keep="last")
        assert len(java) == len(ours) > 0
        pd.testing.assert_frame_equal(java[order].sort_values(order).reset_index(drop=True),
                                      ours[order].sort_values(order).reset_index(drop=True), check_dtype=False)


@pytest.mark.parametrize("shape", ["cross-partition", "fixed-bucket"])
def test_deletion_vector_table(warehouse, shape):
    """Java Paimon reads a deletion-vector table (level 0 skipped, deletion vectors applied, no merge) as pypaimon
    does after every run — runs at free levels with vectors, level 1 merged with the batch when taken — and after a
    full compaction that drops the vectors."""
    from deletion_vector_tables import CROSS, FIXED, runs, write

    spec = CROSS if shape == "cross-partition" else FIXED
    get_or_create_table({"warehouse": warehouse}, "db.t", spec)
    keys = ["id"] if spec is CROSS else ["dt", "id"]
    for i, (frame, kinds) in enumerate(runs(seed=21, n=4)):
        write(warehouse, spec, frame, kinds, f"r{i}")
        rows = assert_java_reads_as_pypaimon(warehouse, "db.t", keys)
        assert len(rows) > 0
    before = len(rows)
    assert compact(get_table({"warehouse": warehouse}, "db.t"), full=True, scope="table")["compacted_buckets"]
    assert len(assert_java_reads_as_pypaimon(warehouse, "db.t", keys)) == before  # vectors dropped, rows kept
    assert java_count(warehouse, "db.t")["rows"] == before  # the benchmark's timed read counts the same rows


@pytest.mark.parametrize("shape", ["cross-partition-vectors", "cross-partition", "fixed-bucket", "dynamic-bucket"])
def test_lookup_changelog(warehouse, shape):
    """changelog-producer=lookup, with deletion vectors or without (level 0 forced up, old rows left to the merge):
    Java Paimon's changelog read of each write (its two snapshots) returns the engine's before/after images, row
    kinds included; the table reads as pypaimon reads it."""
    from changelog_tables import SPECS, changelog_of, soak, with_options, write_all

    vectors = shape.endswith("-vectors")
    spec = with_options(SPECS[shape.removesuffix("-vectors")], {"changelog-producer": "lookup", **(
        {"deletion-vectors.enabled": "true"} if vectors else {"num-levels": "3"})})
    snapshots = write_all(warehouse, spec, soak(seed=7, n_batches=4 if vectors else 5))
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"] if shape.startswith("cross") else ["dt", "id"])
    order = ["dt", "id", "row_kind", "v"]
    kinds = set()
    for start, end in zip([0] + snapshots, snapshots):
        ours = changelog_of(table, start, end)
        java = java_read(warehouse, "db.t", incremental=(start, end, "changelog"),
                         options={"deletion-vectors.enabled": "false"} if vectors else None
                         ).rename(columns={"_row_kind": "row_kind"})
        kinds |= set(ours.row_kind)
        pd.testing.assert_frame_equal(java[order].sort_values(order).reset_index(drop=True),
                                      ours[order].sort_values(order).reset_index(drop=True), check_dtype=False)
    assert kinds == {"+I", "-U", "+U", "-D"}


@pytest.mark.parametrize("shape", ["cross-partition", "fixed-bucket", "dynamic-bucket"])
def test_full_compaction_changelog(warehouse, shape):
    """changelog-producer=full-compaction: Java Paimon's changelog read of each full compaction's snapshot returns
    the engine's before/after images, row kinds included; the table reads as pypaimon reads it."""
    from changelog_tables import FULL, SPECS, changelog_of, soak, with_options, write_and_compact

    compactions = write_and_compact(warehouse, with_options(SPECS[shape], FULL), soak(seed=7, n_batches=4), every=2)
    table = get_table({"warehouse": warehouse}, "db.t")
    assert_java_reads_as_pypaimon(warehouse, "db.t", ["id"] if shape == "cross-partition" else ["dt", "id"])
    order = ["dt", "id", "row_kind", "v"]
    kinds = set()
    for sid in compactions:
        ours = changelog_of(table, sid - 1, sid)
        java = java_read(warehouse, "db.t", incremental=(sid - 1, sid, "changelog")
                         ).rename(columns={"_row_kind": "row_kind"})
        kinds |= set(ours.row_kind)
        pd.testing.assert_frame_equal(java[order].sort_values(order).reset_index(drop=True),
                                      ours[order].sort_values(order).reset_index(drop=True), check_dtype=False)
    assert kinds == {"+I", "-U", "+U", "-D"}


@pytest.mark.parametrize("mode", ["deletion-vectors", "lookup"])
@pytest.mark.parametrize("shape", ["cross-partition", "fixed-bucket"])
def test_partition_overwrite_of_a_table_whose_writes_compact_level_0(warehouse, shape, mode):
    """write_mode="overwrite" into a deletion-vector or lookup-changelog table: Java Paimon reads the replaced
    partitions (OVERWRITE, then the COMPACT lifting level 0) and the next upsert as pypaimon does."""
    from airflow_paimon.engine.runs.commit import run_commit
    from deletion_vector_tables import CROSS, FIXED, runs, write
    from local_runner import stage_run

    spec = CROSS if shape == "cross-partition" else FIXED
    if mode == "lookup":
        spec = TableSpec.from_dict({**spec.to_dict(), "options": {**{k: v for k, v in spec.options.items()
                                                                      if k != "deletion-vectors.enabled"},
                                                                   "changelog-producer": "lookup"}})
    get_or_create_table({"warehouse": warehouse}, "db.t", spec)
    keys = ["id"] if shape == "cross-partition" else ["dt", "id"]
    data = list(runs(seed=33, n=4))
    for i, (frame, kinds) in enumerate(data[:2]):
        write(warehouse, spec, frame, kinds, f"r{i}")
    frame = data[2][0]
    backfill = pa.Table.from_pandas(frame[frame.dt == "a"], schema=spec.arrow_schema(), preserve_index=False)
    run_commit(stage_run(bootstrap({"warehouse": warehouse}, "db.t", warehouse + "/.index", 2), backfill, "ow",
                         write_mode="overwrite"))
    table = get_table({"warehouse": warehouse}, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT"
    rows = assert_java_reads_as_pypaimon(warehouse, "db.t", keys)
    assert set(rows[rows.dt == "a"].id) == set(frame[frame.dt == "a"].id)  # a holds the backfill, only it
    write(warehouse, spec, *data[3], "r3")
    assert_java_reads_as_pypaimon(warehouse, "db.t", keys)


@pytest.mark.parametrize("engine", ["aggregation", "partial-update"])
def test_lookup_changelog_of_a_merging_engine(warehouse, engine):
    """changelog-producer=lookup without deletion vectors on an aggregation (sum) or partial-update table: Java
    Paimon's lookup merge takes a key's newest record above level 0 as its value, pypaimon merges every level; after
    each of four writes (keys updated at every level, new keys, a null that partial-update leaves alone) both read
    the oracle."""
    from changelog_tables import FIXED, with_options

    opts = {"warehouse": warehouse}
    spec = with_options(FIXED, {"changelog-producer": "lookup", "num-levels": "4", "bucket": "1",
                                "merge-engine": engine,
                                **({"fields.v.aggregate-function": "sum"} if engine == "aggregation" else {})})
    get_or_create_table(opts, "db.t", spec)
    state: dict[int, float | None] = {}
    for i, write in enumerate([{1: 5.0}, {1: 1.0, 2: 1.0}, {2: 2.0, 3: 3.0}, {1: None, 3: 4.0, 4: 4.0}]):
        frame = pd.DataFrame({"id": list(write), "dt": "a", "v": list(write.values())})
        upsert(bootstrap(opts, "db.t", warehouse + "/.index", 2),
               pa.Table.from_pandas(frame, schema=spec.arrow_schema(), preserve_index=False), f"r{i}")
        for k, v in write.items():  # the oracle: the sum, or the last value that is not null
            state[k] = state.get(k) if v is None else (state.get(k) or 0.0) + v if engine == "aggregation" else v
        expected = pd.DataFrame({"dt": "a", "id": list(state), "v": list(state.values())})
        java = assert_java_reads_as_pypaimon(warehouse, "db.t", ["dt", "id"])
        assert_table_equals(get_table(opts, "db.t"), expected, ["dt", "id"])
        assert len(java) == len(expected)
