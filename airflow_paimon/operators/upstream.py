"""How a task finds the result it continues from: the ``upstream_output`` it was given (``write.output``), else the
XCom of the nearest upstream task of the right class, so a DAG only chains its tasks. Checked at parse time where it
can be (an XComArg of another kind of task is a ConfigError).

DAG files import this module: it imports nothing heavy."""
from __future__ import annotations

from typing import Any, Literal, overload

from airflow.exceptions import AirflowException
from airflow.sdk import BaseOperator, XComArg
from airflow.sdk.exceptions import AirflowFailException

from airflow_paimon.engine.errors import ConfigError


class UpstreamResultMixin:
    """How a task finds the result it continues from: the ``upstream_output`` it was given, else the XCom of
    the nearest upstream task of a given class. Needs ``task_id`` and ``table`` (an operator's)."""

    task_id: str  # the operator's
    table: str  # the operator's
    upstream_list: list  # the operator's upstream tasks
    dag: Any  # the operator's DAG

    # The result of the task this one continues from (an XComArg such as ``bootstrap.output``, or the dict);
    # set by the operators that take one, checked by upstream_output_of.
    upstream_output: XComArg | dict | None = None
    _upstream_task_id: str | None = None

    def upstream_output_of(self, output: XComArg | dict | None, operator_class: type) -> XComArg | dict | None:
        """``output`` checked at parse time: the XComArg of an ``operator_class`` task (Airflow makes that task
        upstream of this one), or its result dict."""
        if isinstance(output, XComArg):
            tasks = [task for task, _ in output.iter_references()]
            if len(tasks) != 1 or not isinstance(tasks[0], operator_class):
                raise ConfigError(f"{self.task_id} (table {self.table}): upstream_output must be the output of one "
                                  f"{operator_class.__name__}, got the output of "
                                  f"{', '.join(f'{t.task_id} ({type(t).__name__})' for t in tasks)}")
            self._upstream_task_id = tasks[0].task_id
        elif output is not None and not isinstance(output, dict):
            raise TypeError(f"{self.task_id} (table {self.table}): upstream_output must be an XComArg "
                            f"(e.g. bootstrap.output) or a result dict, not {type(output).__name__}")
        return output

    @overload
    def upstream_result(self, context, operator_class: type, required: Literal[True] = True) -> dict: ...
    @overload
    def upstream_result(self, context, operator_class: type, required: bool) -> dict | None: ...
    def upstream_result(self, context, operator_class: type, required: bool = True) -> dict | None:
        """The result this task continues from: ``upstream_output`` when given, else the XCom of the nearest
        upstream task of ``operator_class`` (the task it chains after); None when there is none and it is not
        ``required``. The result must be of this task's own table."""
        if self.upstream_output is not None:
            source, value = self._upstream_task_id or "(upstream_output)", self.upstream_output
        else:
            task = self._nearest_upstream(operator_class)
            if task is None:
                if not required:
                    return None
                raise AirflowFailException(
                    f"{self.task_id} (table {self.table}): no upstream {operator_class.__name__}; chain it after "
                    f"one or pass upstream_output=<that task>.output")
            source, value = task.task_id, context["ti"].xcom_pull(task_ids=task.task_id)
        if not value:
            raise AirflowException(f"{source} left no result in XCom for table {self.table}")
        if not isinstance(value, dict) or value.get("table") != self.table:
            upstream_table = value.get("table") if isinstance(value, dict) else repr(value)[:200]
            raise AirflowFailException(
                f"{self.task_id} writes table {self.table} but its upstream {source} is for table "
                f"{upstream_table}; chain each table's tasks together")
        return value

    def continue_from(self, result: dict) -> None:
        """Continue from ``result`` (an upstream task's result dict) instead of what ``upstream_output`` named."""
        self.upstream_output, self._upstream_task_id = result, None

    def upstream_task(self, operator_class: type[BaseOperator]) -> Any:
        """The task this one continues from: the one ``upstream_output`` names, else the nearest upstream task of
        ``operator_class``."""
        task = (self.dag.get_task(self._upstream_task_id) if self._upstream_task_id
                else self._nearest_upstream(operator_class))
        if task is None:
            raise AirflowFailException(f"{self.task_id} (table {self.table}): no upstream {operator_class.__name__}")
        return task

    def _nearest_upstream(self, operator_class: type[BaseOperator]) -> BaseOperator | None:
        seen: set[str] = set()
        frontier: list = list(self.upstream_list)
        while frontier:
            task = frontier.pop(0)
            if task.task_id in seen:
                continue
            seen.add(task.task_id)
            if isinstance(task, operator_class):
                return task
            frontier.extend(task.upstream_list)
        return None

