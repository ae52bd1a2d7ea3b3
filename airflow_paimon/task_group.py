"""``paimon_upsert``: the usual write of one table — bootstrap-index → assign-and-write → commit (→ compact) — as
one TaskGroup, each task given its upstream's result as an XComArg (``bootstrap.output``), so it reads the
result of its own table's task whatever else the DAG wires around the group.

    with DAG(...):
        extract >> paimon_upsert(table="demo.orders", source="/data/orders/{{ ds }}.parquet") >> notify

DAG files import this module: like the operators, it imports nothing heavy.
"""
from __future__ import annotations

import re
from typing import Any

from airflow.sdk import TaskGroup

from airflow_paimon.engine.errors import ConfigError
from airflow_paimon.hooks.paimon import PaimonHook
from airflow_paimon.operators.compact import PaimonCompactOperator
from airflow_paimon.operators.write import (PaimonAssignAndWriteOperator, PaimonBootstrapIndexOperator,
                                            PaimonCommitOperator)


def group_id_of(table: str) -> str:
    """A TaskGroup id from a table identifier: ``demo.orders`` → ``demo_orders`` (group ids allow only
    letters, digits, ``_`` and ``-``)."""
    if "{{" in table:
        raise ConfigError(f"table {table!r} is templated: give paimon_upsert a group_id")
    return re.sub(r"[^A-Za-z0-9_-]", "_", table)


def paimon_upsert(group_id: str | None = None, *, table: str, source: str | dict, table_schema: dict | None = None,
                  schema_evolution: str = "none", compact: bool = True, compact_kwargs: dict[str, Any] | None = None,
                  bootstrap_kwargs: dict[str, Any] | None = None,
                  paimon_conn_id: str = PaimonHook.default_conn_name, spark_conn_id: str = "spark_default",
                  spark_conf: dict[str, Any] | None = None, max_rewrites: int = 3, job_python: str | None = None,
                  **write_kwargs) -> TaskGroup:
    """A TaskGroup (id ``group_id``, default from the table name) upserting ``source`` into ``table``: tasks
    ``bootstrap_index`` (creating the table from ``table_schema`` if it does not exist; ``bootstrap_kwargs``
    such as ``shards``; ``schema_evolution`` lets both it and the write grow the table: ``"add_columns"`` or
    ``"widen"``), ``assign_and_write`` (``source`` and ``write_kwargs``: ``source_format``,
    ``row_kind_column``, ``write_mode``, ``reprocess_on_clear``, ``write_order``, ...), ``commit``
    (``max_rewrites``: how often it writes the batch again when the table moved under it) and, with ``compact``,
    ``compact`` (``compact_kwargs``: ``full``, ``scope``, ``every_n_runs``, ...). Use it inside ``with DAG(...)``;
    it chains like a task. A task downstream of the group runs after compaction; when ``every_n_runs`` skips the
    compaction, give that task ``trigger_rule="none_failed"``. ``job_python``: every task's job environment
    (airflow_paimon/job_env: over the Spark connection's extra and ``[paimon] job_python``).
    """
    common: dict[str, Any] = {"table": table, "paimon_conn_id": paimon_conn_id, "spark_conn_id": spark_conn_id,
                              "spark_conf": spark_conf, "job_python": job_python}
    with TaskGroup(group_id or group_id_of(table), tooltip=f"upsert into Paimon table {table}") as group:
        bootstrap = PaimonBootstrapIndexOperator(task_id="bootstrap_index", table_schema=table_schema, **common,
                                                 schema_evolution=schema_evolution, **(bootstrap_kwargs or {}))
        write = PaimonAssignAndWriteOperator(task_id="assign_and_write", source=source,
                                             upstream_output=bootstrap.output, schema_evolution=schema_evolution,
                                             **common, **write_kwargs)
        commit = PaimonCommitOperator(task_id="commit", upstream_output=write.output, max_rewrites=max_rewrites,
                                      **common)
        if compact:
            PaimonCompactOperator(task_id="compact", upstream_output=commit.output, **common,
                                  **(compact_kwargs or {}))
    return group
