"""kill -9 of a commit task inside its rewrite, then the task's retry: the run lands once. Another writer commits
keys of the run between its assign-and-write and its commit, so the commit task writes the run's batch again
(bootstrap-index, assign-and-write, commit: PaimonCommitOperator's rewrite); the task's process is killed at a crash
point of that rewrite, and Airflow's retry runs the task again from the run's original results. On a deduplicate, an
aggregation (sum) and a deletion-vector table: after the kill the table reads as before the run or after it, nothing
in between; after the retry pypaimon, pypaimon-rust and Java Paimon read the pandas oracle, no key twice, each
contribution once, the run's data in one snapshot (APPEND, and its COMPACT on a deletion-vector table), and the key
index equal to a rebuild. The expiry case: the rewrite's commit landed, was killed before its index was out, and
its snapshot expired before the retry, which finds it by its commit record and writes nothing again."""
from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from airflow_paimon.engine.files import layout
from airflow_paimon.engine.commit.identity import CommitIdentity
from airflow_paimon.engine.files.layout import index_snapshot_dir
from airflow_paimon.engine.maintenance.expire import expire_snapshots
from airflow_paimon.engine.options import TableOptions
from airflow_paimon.engine.table.table import get_table
from compaction_tables import assert_reads
from faults.batches import ROW_KIND, TABLE_SPEC, random_batch
from faults.harness import assert_index_consistent, commit_task_attempt
from java_paimon import assert_java_reads_as_pypaimon, missing
from local_runner import WRITE_JOBS, Pipeline, from_files
from oracle import expected_upsert, read_table

pytestmark = [pytest.mark.faults]
SEED, RUN = 23, "run-r"


@dataclass(frozen=True)
class Kind:
    """A table kind the rewrite is killed on: its spec, row kind column, key, and its merge as pandas."""

    spec: dict
    row_kind: str | None
    keys: list[str]
    summed: bool = False  # aggregation (sum) rather than deduplicate

    def expected(self, batches: list[pd.DataFrame]) -> pd.DataFrame:
        if self.summed:
            return pd.concat(batches).groupby(self.keys, as_index=False).v.sum()[["id", "dt", "v"]]
        return expected_upsert(batches, "id", row_kind=self.row_kind)

    @property
    def indexed(self) -> bool:
        return self.keys == ["id"]  # cross-partition: a global key index (bootstrap-index has work)


KINDS = {
    "deduplicate": Kind(TABLE_SPEC, ROW_KIND, ["id"]),
    "deletion-vectors": Kind({**TABLE_SPEC, "options": {**TABLE_SPEC["options"], "deletion-vectors.enabled": "true"}},
                             ROW_KIND, ["id"]),
    "aggregation": Kind({"columns": [["id", "BIGINT"], ["dt", "STRING"], ["v", "BIGINT"]], "primary_keys": ["dt", "id"],
                         "partition_keys": ["dt"], "options": {"bucket": "-1", "dynamic-bucket.target-row-num": "20",
                                                               "merge-engine": "aggregation",
                                                               "fields.v.aggregate-function": "sum"}},
                        None, ["dt", "id"], summed=True),
}
EXPIRY = "commit.before_publish+expiry"  # killed after its commit landed, its snapshot expired before the retry
CASES = [("deduplicate", p) for p in ("bootstrap.shard_file_published", "bootstrap.before_manifest",
                                      "bootstrap.after_manifest", "assign_write.before_stage",
                                      "assign_write.after_stage", "commit.before_commit", "commit.before_publish",
                                      "commit.before_clean_up", EXPIRY)]
CASES += [("aggregation", p) for p in ("assign_write.before_stage", "assign_write.after_stage",
                                       "commit.before_commit", "commit.before_publish", EXPIRY)]
CASES += [("deletion-vectors", p) for p in ("bootstrap.after_manifest", "assign_write.after_stage",
                                            "commit.before_commit", "commit.between_append_and_compact",
                                            "commit.before_publish", EXPIRY)]


def batches_of(kind: Kind) -> dict[str, pd.DataFrame]:
    """The seed, and the two batches staged against it: another writer's and the run's (keys in common), and a
    later writer's new keys (the expiry case)."""
    rng = np.random.default_rng(SEED)
    if kind.summed:
        def batch(n, ids=60):
            return pd.DataFrame({"id": rng.integers(0, ids, n), "dt": rng.choice(list("ab"), n),
                                 "v": rng.integers(1, 10, n)})
        frames = {"seed": batch(120), "other": batch(40), "run": batch(40), "later": batch(10, 5)}
        frames["later"]["id"] += 1000  # new keys
        return frames
    seed, next_id = random_batch(rng, pd.DataFrame(columns=["id", "dt", "v"]), 0, 300)
    live = expected_upsert([seed], "id", row_kind=ROW_KIND)
    other, next_id = random_batch(rng, live, next_id, 120)
    run, next_id = random_batch(rng, live, next_id, 120)
    later, _ = random_batch(rng, pd.DataFrame(columns=["id", "dt", "v"]), next_id + 1000, 10)
    return {"seed": seed, "other": other, "run": run, "later": later}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Per kind (built on first use): a table after the seed's run, and the batches as parquet files."""
    built = {}

    def base(name: str):
        if name not in built:
            root, kind = tmp_path_factory.mktemp(f"rewrite-{name}"), KINDS[name]
            frames = batches_of(kind)
            for label, frame in frames.items():
                frame.to_parquet(root / f"{label}.parquet", index=False)
            pipeline(kind, str(root / "warehouse"), "seed").dag_run(str(root / "seed.parquet"), "seed", WRITE_JOBS)
            built[name] = root, frames
        return built[name]
    return base


def pipeline_args(kind: Kind, warehouse: str, dag_id: str = "faults") -> dict:
    return {"catalog_options": {"warehouse": warehouse}, "table": "db.t", "table_spec": kind.spec, "dag_id": dag_id,
            "row_kind_column": kind.row_kind}


def pipeline(kind: Kind, warehouse: str, dag_id: str = "faults") -> Pipeline:
    args = pipeline_args(kind, warehouse, dag_id)
    return Pipeline(args.pop("catalog_options"), args.pop("table"), run_job=from_files, **args)


@pytest.mark.parametrize(("name", "point"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_a_commit_task_killed_inside_its_rewrite_lands_the_run_once_on_its_retry(bases, tmp_path, name, point):
    root, frames = bases(name)
    kind, expiry = KINDS[name], point == EXPIRY
    warehouse = str(tmp_path / "warehouse")
    shutil.copytree(root / "warehouse", warehouse)
    p = pipeline(kind, warehouse)
    source = str(root / "run.parquet")
    done = p.dag_run(source, RUN, jobs=WRITE_JOBS[:2])  # staged at the seed's snapshot
    landed = pipeline(kind, warehouse, "other").dag_run(str(root / "other.parquet"), "other", WRITE_JOBS)["commit"]
    if kind.indexed:  # its index never published: the rewrite's bootstrap catches up from the seed's
        shutil.rmtree(f"{layout.index_dir(p.index_root, p.table)}/{index_snapshot_dir(landed['snapshot_id'])}")

    task = {"pipeline": pipeline_args(kind, warehouse), "done": done, "source": source, "run_id": RUN}
    killed = commit_task_attempt(task, tmp_path / "attempt", point.split("+")[0])
    assert killed.killed and killed.result is None, (killed.returncode, killed.log[-3000:])
    before, after = kind.expected([frames["seed"], frames["other"]]), kind.expected(
        [frames["seed"], frames["other"], frames["run"]])
    table = get_table(p.options, p.table)
    actual = read_table(table)[["id", "dt", "v"]].sort_values(kind.keys).reset_index(drop=True)
    assert any(actual.shape == e.shape and np.array_equal(actual.to_numpy(), e.sort_values(kind.keys).to_numpy())
               for e in (before, after)), "a state in between is visible"

    if expiry:  # a later writer lands, then every snapshot but the latest expires (the run's among them)
        pipeline(kind, warehouse, "later").dag_run(str(root / "later.parquet"), "later", WRITE_JOBS)
        expire_snapshots(get_table(p.options, p.table), TableOptions.parse(p.table, {
            "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 ms"}).expire)
        after = kind.expected([frames["seed"], frames["other"], frames["run"], frames["later"]])

    retried = p.commit_task(done, source, RUN)  # Airflow's retry of the commit task, from the run's own results

    table = get_table(p.options, p.table)
    user = CommitIdentity.for_run("faults", RUN, p.table).commit_user
    ours = [s.commit_kind for s in table.snapshot_manager().list_snapshots() if s.commit_user == user]
    if expiry:
        assert retried["already_committed"] and ours == [], (retried, ours)
    else:
        assert ours == ["APPEND", "COMPACT"] if name == "deletion-vectors" else ours == ["APPEND"], ours
        assert retried["snapshot_id"] == table.snapshot_manager().get_latest_snapshot().id
    assert_reads(table, warehouse, after.sort_values(kind.keys).reset_index(drop=True), kind.keys)
    if missing() is None:
        assert_java_reads_as_pypaimon(warehouse, p.table, kind.keys)
    if kind.indexed:
        assert assert_index_consistent(p, tmp_path) == len(after)
