"""Each raise that was a bare ValueError/RuntimeError/PaimonJobError (retried, whatever it said) now raises a typed
class: triggered here where that is cheap, its class and ``retryable`` asserted; where triggering it needs a table
mid-job, its class's flag is checked through the job frame's result file, as the operator reads it."""
from __future__ import annotations

import io
import json
from datetime import timedelta
from types import SimpleNamespace

import numpy as np
import pendulum
import pyarrow as pa
import pytest
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_paimon.engine.codec.kinds import DELETE, INSERT
from airflow_paimon.engine.errors import (ConfigError, CorruptTableError, InternalError, TransientError,
                                          ValidationError, is_retryable)
from airflow_paimon.engine.jobs.specs import ExpireSpec
from airflow_paimon.engine.files.storage import EscapeError
from airflow_paimon.spark.job_frame import JobRun, execute_job
from error_classes import instance

TABLE = SimpleNamespace(identifier=SimpleNamespace(get_full_name=lambda: "db.t"))
BRANCHED = SimpleNamespace(**vars(TABLE), branch_manager=lambda: SimpleNamespace(branches=lambda: ["b"]))


def _hook(monkeypatch, **extra):
    from airflow_paimon.hooks.paimon import PaimonHook

    monkeypatch.setenv("AIRFLOW_CONN_PAIMON_BAD", json.dumps({"conn_type": "paimon", "extra": extra}))
    return PaimonHook("paimon_bad").catalog_options()


def _timeout(monkeypatch):
    from airflow_paimon.job_env import TIMEOUTS, config_seconds

    option = next(iter(TIMEOUTS))
    monkeypatch.setenv(f"AIRFLOW__PAIMON__{option.upper()}", "0")
    return config_seconds(option)


def _buffer_fed_twice():
    from airflow_paimon.engine.write.buffer import WriteBuffer

    batches = pa.table({"id": pa.array([1, 2], pa.int64())}).to_batches()
    WriteBuffer(["id"], 4, 1 << 20).extend(batches).extend(batches)


def _duplicate_keys():
    from airflow_paimon.engine.write.bucket_writer import _check_unique

    _check_unique(SimpleNamespace(**vars(TABLE), trimmed_primary_keys=["id"]),
                  pa.table({"_KEY_id": pa.array([1, 1], pa.int64())}))


def _buckets(max_buckets: int):
    from airflow_paimon.engine.assign.dynamic import PartitionIndex

    index = PartitionIndex(np.zeros(0, np.int32), np.zeros(0, np.int32), {}, 10, "db.t")
    index._fill(1, lambda bucket: False, max_buckets, np.random.RandomState(0))


def _schema_gone():
    from airflow_paimon.engine.table.schema_evolution import file_column_names

    file_column_names(SimpleNamespace(**vars(TABLE), table_schema=SimpleNamespace(id=2),
                                      schema_manager=SimpleNamespace(get_schema=lambda schema_id: None)), 1)


def _short_hash_index():
    from airflow_paimon.engine.index.hash_index import read_hashes

    table = SimpleNamespace(path_factory=lambda: SimpleNamespace(bucket_index_path=lambda *a: "index-0"),
                            file_io=SimpleNamespace(new_input_stream=lambda path: io.BytesIO(b"123")))
    read_hashes(table, SimpleNamespace(partition=SimpleNamespace(values=[]), bucket=0, index_file="index-0"))


def _aggregate_retracted():
    from airflow_paimon.engine.merge.aggregate import aggregate
    from airflow_paimon.engine.options import TableOptions

    aggregate(pa.table({"d": pa.array([1], pa.int64())}), np.array([DELETE], np.int8), np.array([0]),
              TableOptions.parse("db.t", {"merge-engine": "aggregation", "fields.d.aggregate-function": "max"}),
              ["k"], [], "db.t")


def _operator(cls_name: str, module: str, **kwargs):
    import importlib

    with DAG("d", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        return getattr(importlib.import_module(f"airflow_paimon.{module}"), cls_name)(task_id="t", table="db.t",
                                                                                     **kwargs)


def _compact_spec(monkeypatch):
    op = _operator("PaimonCompactOperator", "operators.compact", every_n_runs="{{ params.n }}")
    op.every_n_runs = "0"  # as rendered
    monkeypatch.setattr(op, "upstream_result", lambda *a, **k: None)
    op.job_spec({}, None)


def _incremental_spec(**kwargs):
    op = _operator("PaimonIncrementalReadOperator", "operators.incremental", **{"start_snapshot_id": 0,
                                                                                "target": "/out", **kwargs})
    op.job_spec({}, SimpleNamespace(catalog_options=lambda: {}))


def _upstream_of_another_kind():
    from airflow_paimon.operators.paimon import PaimonBootstrapIndexOperator, PaimonCommitOperator

    with DAG("d", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
        PaimonCommitOperator(task_id="c", table="db.t",
                             upstream_output=PaimonBootstrapIndexOperator(task_id="b", table="db.t").output)


def _run_without_result():
    execute_job(lambda spec: {}, ExpireSpec, {}, JobRun(None))


def _call(dotted: str, *args, **kwargs):
    """``airflow_paimon.<module>:<function>(*args, **kwargs)``, imported when the case runs."""
    import importlib

    module, _, name = dotted.partition(":")
    target = importlib.import_module(f"airflow_paimon.{module}")
    for part in name.split("."):
        target = getattr(target, part)
    return lambda monkeypatch: target(*args, **kwargs)


# (former bare raise, what triggers it, the class it raises now); ``retryable`` is the class's
TRIGGERED = [
    ("assets.py paimon_asset", _call("assets:paimon_asset", "db/x"), ConfigError),
    ("hooks/paimon.py no warehouse", lambda mp: _hook(mp), ConfigError),
    ("hooks/paimon.py catalog_options not JSON", lambda mp: _hook(mp, warehouse="/w", catalog_options="{x"),
     ConfigError),
    ("hooks/paimon.py catalog_options not an object", lambda mp: _hook(mp, warehouse="/w", catalog_options=["a"]),
     ConfigError),
    ("job_env config_seconds", _timeout, ConfigError),
    ("codec/binary_row.py binary_rows", _call("engine.codec.binary_row:binary_rows", [pa.array([1])], []),
     InternalError),
    ("write/buffer.py extend twice", lambda mp: _buffer_fed_twice(), InternalError),
    ("write/bucket_writer.py duplicate keys", lambda mp: _duplicate_keys(), InternalError),
    ("assign/dynamic.py too many buckets", lambda mp: _buckets(-1), ValidationError),
    ("assign/dynamic.py no bucket for this assigner", lambda mp: _buckets(1), ValidationError),
    ("layout.py default_root", _call("engine.files.layout:default_root", "/w", "nope"), InternalError),
    ("maintenance/expire.py has branches", _call("engine.maintenance.expire:expire_snapshots", BRANCHED, None),
     ValidationError),
    ("maintenance/orphans.py has branches", _call("engine.maintenance.orphans:orphan_files", BRANCHED, 0),
     ValidationError),
    ("maintenance/orphans.py paths do not line up",
     lambda mp: _call("engine.maintenance.orphans:_check_paths_line_up", TABLE, ["/a/data-1"],
                      SimpleNamespace(data={"/b/data-1"}, metadata=set()))(mp), CorruptTableError),
    ("catalog.py no warehouse yet", lambda mp: _call("engine.table.catalog:require_warehouse",
                                                     {"warehouse": "/nonexistent/warehouse"})(mp), TransientError),
    ("schema_evolution.py schema gone", lambda mp: _schema_gone(), CorruptTableError),
    ("index/sharding.py unshardable key",
     _call("engine.index.sharding:spark_hash", [pa.array([[1]], pa.list_(pa.int32()))]), ValidationError),
    ("index/shard.py export_delta after a release",
     _call("engine.index.shard:ShardIndex.export_delta", SimpleNamespace(exports_in_full=True), "/x"),
     InternalError),
    ("index/buckets.py target-row-num", _call("engine.index.buckets:BucketAssigner", 0, 1, 0), InternalError),
    ("index/hash_index.py corrupt file", lambda mp: _short_hash_index(), CorruptTableError),
    ("merge/rowkind.py unknown operation",
     _call("engine.merge.rowkind:row_kinds", pa.array(["X"]), identifier="db.t"), ValidationError),
    ("merge/rowkind.py partial-update with sequence-group",
     _call("engine.merge.rowkind:_partial_update", None, None, None, None, True,
           SimpleNamespace(sequence_groups={"g": ["v"]}), "db.t", 0), ValidationError),
    ("merge/aggregate.py retraction", lambda mp: _aggregate_retracted(), ValidationError),
    ("merge/aggregate.py function refused",
     _call("engine.merge.aggregate:_Field.fail", SimpleNamespace(identifier="db.t", name="v", col=pa.array([1])),
           "sum", "why"), ValidationError),
    ("merge/merge_function.py partial-update retraction",
     _call("engine.merge.merge_function:_partial_update", pa.table({"v": [1]}), np.array([DELETE], np.int8),
           np.array([0]), SimpleNamespace(refuses_retractions=True), "db.t"), ValidationError),
    ("merge/merge_engine.py MergeRules.of", _call("engine.merge.merge_engine:MergeRules.of",
                                                  {"merge-engine": "lookup"}, "db.t"), ValidationError),
    ("merge/merge_engine.py check_retractions",
     lambda mp: _call("engine.merge.merge_engine:MergeRules.of", {"merge-engine": "first-row"})(mp)
     .check_retractions(np.array([INSERT, DELETE], np.int8), "db.t"), ValidationError),
    ("runs/commit.py confined_parent", _call("engine.runs.commit:confined_parent", "/x/y", "db.t", "run"),
     EscapeError),
    ("snapshots.py check_commit_kinds", _call("engine.snapshot.snapshots:check_commit_kinds", ["APPENDD"]),
     ConfigError),
    ("snapshots.py parse_cursor", _call("engine.snapshot.snapshots:parse_cursor", -1), ConfigError),
    ("operators/maintenance.py older_than", lambda mp: _operator(
        "PaimonRemoveOrphanFilesOperator", "operators.maintenance", older_than=timedelta(0)), ConfigError),
    ("operators/compact.py every_n_runs", lambda mp: _operator(
        "PaimonCompactOperator", "operators.compact", every_n_runs=0), ConfigError),
    ("operators/compact.py scope", lambda mp: _operator("PaimonCompactOperator", "operators.compact",
                                                        scope="nope"), ConfigError),
    ("operators/compact.py every_n_runs rendered", _compact_spec, ConfigError),
    ("operators/upstream.py upstream_output", lambda mp: _upstream_of_another_kind(), ConfigError),
    ("operators/write.py check_choice", _call("operators.write:check_choice", "x", "z", ("a",)), ConfigError),
    ("operators/write.py shards", lambda mp: _operator("PaimonBootstrapIndexOperator", "operators.write",
                                                      shards=0), ConfigError),
    ("operators/write.py max_rewrites", lambda mp: _operator("PaimonCommitOperator", "operators.write",
                                                            max_rewrites=-1), ConfigError),
    ("operators/incremental.py end_snapshot_id", lambda mp: _incremental_spec(end_snapshot_id="x"), ConfigError),
    ("operators/incremental.py no start", lambda mp: _incremental_spec(start_snapshot_id=None), ConfigError),
    ("operators/incremental.py bad start", lambda mp: _incremental_spec(start_snapshot_id="x"), ConfigError),
    ("operators/incremental.py no target", lambda mp: _incremental_spec(target=""), ConfigError),
    ("operators/lifecycle.py nothing to alter", lambda mp: _operator("PaimonAlterTableOperator",
                                                                     "operators.lifecycle"), ConfigError),
    ("operators/lifecycle.py rollback target", lambda mp: _operator("PaimonRollbackOperator",
                                                                    "operators.lifecycle"), ConfigError),
    ("task_group.py templated table", _call("task_group:group_id_of", "{{ params.t }}"), ConfigError),
    ("table_files.py no warehouse", _call("table_files:TableFiles", {}, "db.t"), ConfigError),
    ("sensors/paimon.py reschedule without a cursor", lambda mp: _operator(
        "PaimonSnapshotSensor", "sensors.paimon", mode="reschedule"), ConfigError),
    ("spark/connect_server.py token on the command line",
     _call("spark.connect_server:server_command", conf={"spark.connect.authenticate.token": "x"}), ConfigError),
    ("spark/pipelines/cross_partition.py rows of another task",
     _call("spark.pipelines.cross_partition:check_shards_of_task", np.array([0, 5]),
           SimpleNamespace(identifier="db.t"), 0, 2), InternalError),
    ("spark/job_frame.py current_run", _call("spark.job_frame:current_run"), InternalError),
    ("spark/job_frame.py execute_job without a result", lambda mp: _run_without_result(), InternalError),
]

# (former bare raise, the class it raises now): reached only mid-job, on a table in a given state
MID_JOB = [
    ("engine/table/schema_commit.py schema changed too often", TransientError),
    ("engine/write/context.py schema changed during the job", TransientError),
    ("engine/compact/commit.py COMPACT snapshot not found", TransientError),
    ("engine/commit/compact_increment.py COMPACT snapshot not found", TransientError),
    ("engine/commit/committer.py commit snapshot not found", TransientError),
    ("engine/maintenance/partition_expiry.py drop snapshot not found", TransientError),
    ("engine/maintenance/orphans.py staged run unreadable", CorruptTableError),
    ("engine/index/bootstrap.py a key in two buckets", CorruptTableError),
    ("engine/index/hash_index.py two HASH index files", CorruptTableError),
    ("engine/assign/dynamic.py rows of another assigner", InternalError),
    ("spark/routing.py no route value", InternalError),
    ("spark/incremental.py row_kind_column clashes", ValidationError),
]


@pytest.mark.parametrize("where, trigger, cls", TRIGGERED, ids=[c[0] for c in TRIGGERED])
def test_a_former_bare_raise_is_typed(monkeypatch, where, trigger, cls):
    with pytest.raises(cls) as raised:
        trigger(monkeypatch)
    assert type(raised.value) is cls, f"{where}: {type(raised.value).__name__}: {raised.value}"
    assert is_retryable(raised.value) is (cls is TransientError), "only a condition of the moment is retried"


@pytest.mark.parametrize("where, cls", MID_JOB, ids=[c[0] for c in MID_JOB])
def test_a_mid_job_raise_crosses_the_result_file_with_its_flag(tmp_path, where, cls):
    result = tmp_path / "result.json"

    def job(spec):
        raise instance(cls)

    assert execute_job(job, ExpireSpec, {"catalog_options": {"warehouse": str(tmp_path)}, "table": "db.t"},
                       JobRun(str(result))) is False
    failed = json.loads(result.read_text())
    assert failed["error"].startswith(f"{cls.__name__}: ") and failed["retryable"] is (cls is TransientError)


def test_a_sensor_task_fails_without_retries_on_a_bad_cursor(monkeypatch):
    sensor = _operator("PaimonSnapshotSensor", "sensors.paimon", after_snapshot_id="x")
    monkeypatch.setattr(sensor, "_table", lambda: None)
    with pytest.raises(AirflowFailException, match="after_snapshot_id must be a snapshot id"):
        sensor.poke({})


@pytest.mark.parametrize("retryable", [False, True, None])
def test_the_sensor_fails_as_its_triggers_error_says(retryable):
    sensor = _operator("PaimonSnapshotSensor", "sensors.paimon")
    event = {"status": "error", "message": "db.t: SomeError: x", **({} if retryable is None else
                                                                    {"retryable": retryable})}
    with pytest.raises(AirflowException, match="waiting for a snapshot of db.t: db.t: SomeError") as raised:
        sensor.execute_complete({}, event)
    assert isinstance(raised.value, AirflowFailException) is (retryable is False)
