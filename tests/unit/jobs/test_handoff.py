"""The hand-off between a task and its job or step (airflow_paimon/handoff.py): the spec file is private and gone
once read, a driver's arguments read back as they were given, and one error envelope carries an error's class,
message and flags across and turns back into the exception each side raises."""
from __future__ import annotations

import os
import stat

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_paimon.engine.errors import (MissingFileError, TransientError, UnknownCommitError,
                                          ValidationError)
from airflow_paimon.handoff import (Failure, job_arguments, parse_args, read_json, spec_file,
                                    write_private_json)
from airflow_paimon.job_env.step import FinalStepError, StepError, StepValidationError
from airflow_paimon.operators.rewrite import StaleWriteError

SPEC = {"catalog_options": {"warehouse": "/w", "token": "tK-91x"}, "table": "db.t"}


def test_the_spec_file_is_private_and_deleted_once_read(tmp_path):
    with spec_file(SPEC) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        spec, result_uri = parse_args(job_arguments(path, str(tmp_path / "result.json")))
        assert spec == SPEC and result_uri == str(tmp_path / "result.json")
        assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))


def test_a_private_file_is_new_and_only_its_users(tmp_path):
    path = str(tmp_path / "result.json")
    write_private_json(path, {"value": [1]})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and read_json(path) == {"value": [1]}
    with pytest.raises(FileExistsError):
        write_private_json(path, {"value": [2]})


@pytest.mark.parametrize("error,retryable,rewrite", [
    (TransientError("moved"), True, False), (UnknownCommitError("gone"), False, False),
    (MissingFileError("no file"), False, True), (OSError("reset"), True, False)])
def test_an_error_crosses_with_its_flags_and_redacted(error, retryable, rewrite):
    failure = Failure.of(type(error)(f"{error} (token tK-91x)"), ["tK-91x"])
    result = failure.to_result()
    assert result == {"error": f"{type(error).__name__}: {error} (token ***)", "retryable": retryable,
                      "rewrite": rewrite}
    assert Failure.from_result(result) == failure
    assert Failure.from_result({"table": "db.t"}) is None  # a job's result, not an error


@pytest.mark.parametrize("error,operator,step", [
    (TransientError("moved"), AirflowException, StepError),
    (UnknownCommitError("gone"), AirflowFailException, FinalStepError),
    (MissingFileError("no file"), StaleWriteError, FinalStepError),
    (ValidationError("db.t", "bad input"), AirflowFailException, StepValidationError)])
def test_each_side_raises_the_error_its_flags_say(error, operator, step):
    failure = Failure.from_result(Failure.of(error).to_result())
    assert failure is not None
    raised = failure.exception("commit for table db.t failed", AirflowException, AirflowFailException,
                               rewrite=StaleWriteError)
    assert type(raised) is operator and str(raised) == f"commit for table db.t failed: {type(error).__name__}: {error}"
    raised = failure.exception("create_table", StepError, FinalStepError, invalid=StepValidationError)
    assert type(raised) is step
    assert str(raised) == (str(error) if step is StepValidationError else f"create_table: {failure.text}")
