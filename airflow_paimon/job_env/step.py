"""One job-side step run from Airflow's side: in this process when it holds the job side, else as
``JOB_PYTHON -m airflow_paimon.job_env.step SPEC RESULT`` in the job environment. A step is a function marked
``@job_step`` in the module of what it serves (job_env/steps.py, ui/steps.py); the caller passes the function
itself, so this module imports none of them, and the job environment finds it by its module and name. The spec
file holds the step's arguments, catalog options (keys, tokens) included: mode 0600 in a private directory,
deleted once read; never argv. The result file holds ``{"value": ...}`` or the error's envelope. Both files, and
the envelope, are the spark-submit jobs' own: the hand-off's (airflow_paimon/handoff.py)."""
from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable

from airflow_paimon.engine.errors import PaimonJobError, ValidationError
from airflow_paimon.handoff import Failure, read_json, read_spec_file, spec_file, write_private_json
from airflow_paimon.job_env import JobEnv, job_python, runs_here

OUTPUT_SHOWN = 4000  # characters of a failed step's stderr that its error repeats


class StepError(PaimonJobError):
    """A step failed in the job environment (``<step>: <class there>: <message>``)."""

    retryable: bool = True  # the error there said a retry can help (or it was not ours: a crash, an OSError)


class FinalStepError(StepError):
    """A step failed in the job environment with an error whose class says a retry cannot help."""

    retryable: bool = False  # decided there, by the error's own class (engine/errors.py)


class StepValidationError(ValidationError):
    """A ValidationError raised in the job environment: the same refusal, its message as it was there."""

    retryable: bool = False  # as ValidationError's: the same input meets the same table

    def __init__(self, message: str):
        Exception.__init__(self, message)  # ValidationError's own __init__ would prefix the table again
        self.table = self.column = self.value = self.option = None


def job_step(function: Callable[..., Any]) -> Callable[..., Any]:
    """Marks ``function`` as a step: JSON values in and out, runnable in either environment."""
    function.job_step = True  # type: ignore[attr-defined]
    return function


def step_name(step: Callable[..., Any]) -> str:
    """How the job environment finds ``step``: its module and name."""
    if not getattr(step, "job_step", False):
        raise KeyError(f"{getattr(step, '__qualname__', step)!r} is not a job step (@job_step)")
    return f"{step.__module__}:{step.__qualname__}"


def resolve_step(name: str) -> Callable[..., Any]:
    """The step a spec names; only this package's functions marked ``@job_step`` run."""
    module, _, function = name.partition(":")
    found = None
    if module.startswith("airflow_paimon.") and function.isidentifier():
        found = getattr(importlib.import_module(module), function, None)
    if not getattr(found, "job_step", False):
        raise KeyError(f"unknown step {name!r}")
    return found  # type: ignore[return-value]


def run_step(step: Callable[..., Any], env: JobEnv, timeout: float | None = None,
             on_start: Callable[[subprocess.Popen], None] | None = None, **arguments):
    """``step(**arguments)``: here when this interpreter has the job side and no other is configured, else in
    the job environment (``env``: where, as resolve_job_env found it). ``timeout``: seconds after which the step
    is abandoned (TimeoutError, never a StepError); in this process it runs on in a daemon thread whose result
    nobody waits for, in the job environment its process is killed. ``on_start``: called with the job
    environment's process once started (to stop it from on_kill)."""
    if not isinstance(env, JobEnv):  # where the step runs is always resolved (resolve_job_env), never assumed
        raise TypeError(f"run_step needs a JobEnv (airflow_paimon.job_env.resolve_job_env), not {env!r}")
    name = step_name(step)
    if not runs_here(env):
        return _in_job_env(job_python(env), name, arguments, timeout, on_start)
    if timeout is None:
        return step(**arguments)
    return _in_thread(step, timeout, arguments)


def _in_thread(step: Callable[..., Any], timeout: float, arguments: dict):
    """``step(**arguments)`` in a daemon thread, waited for ``timeout`` seconds: a step still running then (a store's
    client retrying an unreachable endpoint) is left to end on its own, and never holds up this process's exit
    (an executor's worker thread would: they are joined at exit)."""
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["value"] = step(**arguments)
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            done["error"] = e

    thread = threading.Thread(target=run, name=f"paimon-{step.__name__}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"{step.__name__} took more than {timeout:g} s")
    if "error" in done:
        raise done["error"]
    return done["value"]


def _in_job_env(python: str, name: str, arguments: dict, timeout: float | None = None,
                on_start: Callable[[subprocess.Popen], None] | None = None):
    step = name.rpartition(":")[2]
    started = time.monotonic()
    # the result's own private directory: the child removes the spec's once it has read it
    results, done = tempfile.mkdtemp(prefix="airflow-paimon-step-"), None
    try:
        with spec_file({"step": name, "arguments": arguments}) as spec_path:
            result_path = os.path.join(results, "result.json")
            with subprocess.Popen([python, "-m", __spec__.name, spec_path, result_path], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) as process:
                if on_start is not None:
                    on_start(process)
                try:
                    _, stderr = process.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    raise TimeoutError(f"{step} took more than {timeout:g} s in {python}") from None
                done = subprocess.CompletedProcess(process.args, process.returncode, None, stderr)
        result = read_json(result_path)
    except TimeoutError:  # an OSError too, but the process started: a timeout, not a failure to start
        raise
    except (OSError, ValueError):
        why = f"exited {done.returncode}: {done.stderr[-OUTPUT_SHOWN:]}" if done else "did not start"
        raise Failure("ProcessFailed", f"{python} left no result; it {why}").exception(step, StepError,
                                                                                        FinalStepError) from None
    finally:
        shutil.rmtree(results, ignore_errors=True)
    _log(step, python, time.monotonic() - started)
    failure = Failure.from_result(result)
    if failure is not None:
        raise failure.exception(step, StepError, FinalStepError, invalid=StepValidationError)
    return result["value"]


def _log(step: str, python: str, seconds: float) -> None:
    logging.getLogger(__name__).info("%s ran in the job environment (%s) in %.2f s", step, python, seconds)


def main(argv: list[str]) -> int:
    """The job environment's side: run the spec's step, write its result (or error)."""
    spec_path, result_path = argv
    spec = read_spec_file(spec_path)
    try:
        payload = {"value": resolve_step(spec["step"])(**spec["arguments"])}
    except Exception as e:  # noqa: BLE001 - every error crosses back to the task, named
        payload = Failure.of(e).to_result()
    write_private_json(result_path, payload)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # The result is written: leave now, as a spark-submit driver does, rather than wait at exit for threads a client
    # left behind (gRPC's, after a Spark Connect server stopped answering: the task's SIGTERM seen to wait minutes).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
