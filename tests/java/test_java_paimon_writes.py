"""Java Paimon 1.0 writes and compacts beside the engine: its commits land between our runs (our bootstrap catches
up from them, our commit rebases over them or refuses them as over any other writer's), its full compaction of
our tables (cross-partition and deletion-vector tables among them) is caught up by our next runs, and Java,
pypaimon and a pandas oracle read the same table throughout."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from airflow_paimon.engine.errors import StaleIndexError
from airflow_paimon.engine.table.table import TableSpec, get_or_create_table, get_table
from changelog_tables import changelog_of
from java_paimon import assert_java_reads_as_pypaimon, java_compact, java_read, java_write, missing
from local_runner import bootstrap, compact, in_process, stage_run, upsert
from oracle import assert_table_equals

pytestmark = [pytest.mark.java, pytest.mark.skipif(missing() is not None, reason=str(missing()))]

COLUMNS = [["id", "BIGINT"], ["dt", "STRING"], ["v", "DOUBLE"]]
DV = {"deletion-vectors.enabled": "true"}
SHAPES = {"fixed": (["dt", "id"], {"bucket": "2"}),
          "dynamic": (["dt", "id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}),
          "cross-partition": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}),
          "fixed-dv": (["dt", "id"], {"bucket": "2", **DV}),
          "dynamic-dv": (["dt", "id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3", **DV}),
          "fixed-lookup": (["dt", "id"], {"bucket": "2", "changelog-producer": "lookup"}),
          "fixed-sum-lookup": (["dt", "id"], {"bucket": "2", "changelog-producer": "lookup",
                                              "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}),
          "cross-partition-dv": (["id"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3", **DV})}


class Table:
    """One table written by us and by Java, and its oracle (deduplicate: the last row of a key, -D removes it;
    a cross-partition key moves; aggregation sum: a key's sum, -D subtracts)."""

    def __init__(self, warehouse: str, shape: str):
        keys, options = SHAPES[shape]
        self.spec = TableSpec.from_dict({"columns": COLUMNS, "primary_keys": keys, "partition_keys": ["dt"],
                                         "options": options})
        self.warehouse, self.opts, self.cross = warehouse, {"warehouse": warehouse}, keys == ["id"]
        self.sum, self.shadowed = options.get("merge-engine") == "aggregation", False
        self.state: dict = {}
        get_or_create_table(self.opts, "db.t", self.spec)

    def batch(self, rows: list[tuple]) -> tuple[pd.DataFrame, list[str]]:
        frame = pd.DataFrame([r[:3] for r in rows], columns=["id", "dt", "v"]).astype({"v": float})
        return frame, [r[3] if len(r) > 3 else "+I" for r in rows]

    def arrow(self, frame: pd.DataFrame) -> pa.Table:
        return pa.Table.from_pandas(frame, schema=self.spec.arrow_schema(), preserve_index=False)

    def landed(self, rows: list[tuple]) -> None:
        for id_, dt, v, *kind in rows:
            key = id_ if self.cross else (dt, id_)
            if self.sum:
                old = self.state.get(key, {"v": 0.0})["v"]
                self.state[key] = {"id": id_, "dt": dt, "v": old - v if kind and kind[0] == "-D" else old + v}
            elif kind and kind[0] == "-D":
                self.state.pop(key, None)
            else:
                self.state[key] = {"id": id_, "dt": dt, "v": float(v)}

    def ours(self, rows: list[tuple], run_id: str) -> int:
        frame, kinds = self.batch(rows)
        sid, already = upsert(bootstrap(self.opts, "db.t", self.warehouse + "/.index", 2), self.arrow(frame), run_id,
                              row_kinds=[3 if k == "-D" else 0 for k in kinds])
        assert not already
        self.landed(rows)
        return sid

    def stage(self, rows: list[tuple], run_id: str):
        frame, kinds = self.batch(rows)
        return stage_run(bootstrap(self.opts, "db.t", self.warehouse + "/.index", 2), self.arrow(frame), run_id,
                         row_kinds=[3 if k == "-D" else 0 for k in kinds])

    def java(self, rows: list[tuple], identifier: int) -> int:
        frame, kinds = self.batch(rows)
        sid = java_write(self.warehouse, "db.t", frame, kinds, "java-writer", identifier)
        self.shadowed = self.shadowed or self.sum
        self.landed(rows)
        return sid

    def check(self) -> pd.DataFrame:
        """Java reads what pypaimon reads, and that is the oracle, no key twice. A key Java wrote again in an
        aggregation table with a lookup changelog keeps its older record above level 0, shadowed: Java's lookup
        merge reads the newest only, pypaimon's reader merges every level (it counts the older sum again) until
        a compaction rewrites them — then Java alone is compared with the oracle."""
        expected = pd.DataFrame(list(self.state.values()), columns=["id", "dt", "v"]).sort_values(["dt", "id"])
        if self.shadowed:
            java = java_read(self.warehouse, "db.t")
            assert not java.duplicated(["dt", "id"]).any()
            pd.testing.assert_frame_equal(java[list(expected.columns)].sort_values(["dt", "id"]).reset_index(drop=True),
                                          expected.reset_index(drop=True), check_dtype=False)
            return java
        assert_table_equals(get_table(self.opts, "db.t"), expected, ["dt", "id"])
        return assert_java_reads_as_pypaimon(self.warehouse, "db.t", ["dt", "id"])

    def compact(self, java: bool = False) -> int:
        """A full compaction, Java's or ours: no record is shadowed after it."""
        self.shadowed = False
        if java:
            return java_compact(self.warehouse, "db.t")
        return compact(get_table(self.opts, "db.t"), run_id=f"c{len(self.state)}", full=True, scope="table")[
            "snapshot_id"]

    def our_commits(self) -> list:
        """(commit user, identifier) of every APPEND that is not Java's: each of our runs lands once."""
        snapshots = get_table(self.opts, "db.t").snapshot_manager().list_snapshots()
        return [(s.commit_user, s.commit_identifier) for s in snapshots
                if s.commit_kind == "APPEND" and s.commit_user != "java-writer"]


@pytest.mark.parametrize("shape", ["fixed", "dynamic", "fixed-dv", "dynamic-dv", "fixed-lookup", "fixed-sum-lookup"])
def test_java_writes_between_our_runs(warehouse, shape):
    t = Table(warehouse, shape)
    t.ours([(1, "a", 1), (2, "a", 2), (3, "b", 3), (4, "b", 4), (5, "a", 5), (6, "b", 6)], "r0")
    t.java([(1, "a", 10), (7, "a", 7), (8, "b", 8), (3, "b", 0, "-D")], 1)
    t.check()
    t.ours([(7, "a", 70), (8, "b", 80), (9, "a", 9), (2, "a", 0, "-D")], "r1")  # our bootstrap caught up
    t.check()
    # Java commits between our run's staging and its commit: other keys and partition -> ours rebases over it (a
    # deletion-vector or lookup write compacted files of its base: refused as stale, the run again lands)
    staged = t.stage([(10, "a", 10), (1, "a", 11)], "r2")
    t.java([(20, "c", 20), (21, "c", 21)], 2)
    if shape.endswith(("-dv", "-lookup")):
        with pytest.raises(StaleIndexError):
            in_process("commit", staged)
        t.ours([(10, "a", 10), (1, "a", 11)], "r2")
    else:
        assert not in_process("commit", staged).already_committed
        t.landed([(10, "a", 10), (1, "a", 11)])
    t.check()
    # ... the same key: ours is refused (its bootstrap is stale), the run again from its bootstrap lands once
    staged = t.stage([(1, "a", 12), (11, "b", 11)], "r3")
    t.java([(1, "a", 13), (5, "a", 0, "-D")], 3)
    with pytest.raises(StaleIndexError):
        in_process("commit", staged)
    t.ours([(1, "a", 12), (11, "b", 11)], "r3")
    t.java([(11, "b", 110), (22, "c", 22)], 4)  # and Java after us again
    rows = t.check()
    assert len(rows) == len(t.state) and len(set(t.our_commits())) == len(t.our_commits()) == 4
    if t.sum:  # our full compaction merges as Java's lookup merge does: then pypaimon reads the oracle too
        t.compact()
        t.check()
    if shape.endswith("-lookup"):  # each snapshot's changelog, Java's writes' and ours, read alike by both
        table = get_table(t.opts, "db.t")
        order, kinds = ["dt", "id", "row_kind", "v"], set()
        for sid in range(1, table.snapshot_manager().get_latest_snapshot().id + 1):
            ours = changelog_of(table, sid - 1, sid)
            java = java_read(warehouse, "db.t", incremental=(sid - 1, sid, "changelog"))
            assert len(java) == len(ours), (sid, java, ours)
            if len(ours):
                kinds |= set(ours.row_kind)
                pd.testing.assert_frame_equal(
                    java.rename(columns={"_row_kind": "row_kind"})[order].sort_values(order).reset_index(drop=True),
                    ours[order].sort_values(order).reset_index(drop=True), check_dtype=False)
        assert kinds == ({"+I", "-U", "+U"} if t.sum else {"+I", "-U", "+U", "-D"})


@pytest.mark.parametrize("shape", list(SHAPES))
def test_java_compacts_our_tables(warehouse, shape):
    t = Table(warehouse, shape)
    t.ours([(1, "a", 1), (2, "a", 2), (3, "b", 3), (4, "b", 4), (5, "a", 5), (6, "b", 6)], "r0")
    t.ours([(1, "b", 10), (2, "a", 20), (7, "a", 7), (3, "b", 0, "-D")], "r1")  # (1: a move, cross-partition)
    before = t.check()
    sid = t.compact(java=True)
    table = get_table(t.opts, "db.t")
    assert table.snapshot_manager().get_latest_snapshot().commit_kind == "COMPACT" and sid == table.snapshot_manager() \
        .get_latest_snapshot().id
    pd.testing.assert_frame_equal(t.check(), before)
    # our next runs catch up from Java's files (and deletion vectors): updates, a move, a delete, new keys
    t.ours([(2, "b", 200), (4, "b", 40), (6, "b", 0, "-D"), (8, "a", 8)], "r2")
    t.check()
    t.ours([(1, "a", 100), (8, "a", 80), (9, "b", 9)], "r3")
    t.check()
    t.compact()
    t.check()
    t.compact(java=True)  # and Java once more, over our compaction
    t.check()
    assert len(set(t.our_commits())) == len(t.our_commits()) == 4


def test_java_does_not_write_a_cross_partition_table(warehouse):
    """Java's table write places a cross-partition key only through Flink's global index assigner: written by Java
    Paimon here only by compaction (above)."""
    t = Table(warehouse, "cross-partition")
    t.ours([(1, "a", 1)], "r0")
    with pytest.raises(AssertionError, match="global index"):
        t.java([(2, "a", 2)], 1)
