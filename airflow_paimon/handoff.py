"""The hand-off between the Airflow side and the job side: what crosses from a task to its Spark job (or to a step in
the job environment) and back. Both sides import this module (operators, job_env/step.py, spark/job_frame.py); it
imports nothing heavy (pyarrow comes with reading an object store's result, in a function).

- The spec file: the job's spec holds the catalog options (object-store keys, tokens), so it never travels on a
  command line (visible to every user in ``ps``): the Airflow side writes it to a file only its user can read
  (mode 0600, in a fresh mode-0700 directory) and passes that file's path; the job side deletes it once read. A
  spark-submit driver therefore runs on the worker (client deploy mode; spark/backends.py refuses cluster).
- The driver's arguments: ``--spec-file`` and ``--result-uri`` (``job_arguments``, ``parse_args``).
- The result file: the job's result dict as JSON (``write_result``, ``read_result``: the results root, an object
  store too), or a step's (``write_private_json``, ``read_json``: a private local file).
- One error envelope (``Failure``): an error on the job side becomes ``{"error": "<class>: <message>", "retryable",
  "rewrite"}`` (whether a retry, or writing the run's batch again, can help: its class declares it,
  engine/errors.py), and the Airflow side turns that back into the typed exception it raises.
- Redaction: a secret catalog option's value reaches neither a log nor an error (``secrets_of``, ``redact``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from airflow_paimon.engine.errors import heals_by_rewrite, is_retryable

SPEC_FILE = "spec.json"


def write_private_json(path: str, value) -> None:
    """``value`` as JSON in a new file ``path`` only this user can read (mode 0600; an existing file is refused)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(value, f)


def read_json(path: str):
    """The JSON value in the local file ``path``."""
    with open(path) as f:
        return json.load(f)


@contextmanager
def spec_file(spec: dict) -> Iterator[str]:
    """The path of a file holding ``spec`` (mode 0600, in a fresh mode-0700 directory); removed on exit."""
    directory = tempfile.mkdtemp(prefix="airflow-paimon-spec-")  # created 0700, name unguessable
    try:
        path = os.path.join(directory, SPEC_FILE)
        write_private_json(path, spec)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def read_spec_file(path: str) -> dict:
    """The spec in ``path``; the file (and its private directory, if empty) is deleted once read."""
    try:
        return read_json(path)
    finally:
        for remove in (os.unlink, lambda p: os.rmdir(os.path.dirname(p))):
            try:
                remove(path)
            except OSError:
                pass


def job_arguments(spec_path: str, result_uri: str) -> list[str]:
    """A spark-submit driver's arguments: where its spec file is and where its result goes (``parse_args``)."""
    return ["--spec-file", spec_path, "--result-uri", result_uri]


def parse_args(argv: list[str] | None = None) -> tuple[dict, str]:
    """The spec (its file deleted once read) and the result URI of a driver's ``job_arguments``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec-file", required=True, help="a file holding the job spec as JSON; deleted once read")
    parser.add_argument("--result-uri", required=True, help="where to write the result JSON")
    args = parser.parse_args(argv)
    return read_spec_file(args.spec_file), args.result_uri


def write_result(result_uri: str, result: dict) -> str:
    """``result`` (a job's result dict, or its ``Failure.to_result()``) written to ``result_uri`` at once (a local
    path or an object store's, engine/files/storage.py); the JSON text written."""
    from airflow_paimon.engine.files import storage

    text = json.dumps(result)
    storage.write_bytes_atomic(result_uri, text.encode())
    return text


def read_result(result_uri: str) -> dict:
    """The dict a job wrote to ``result_uri``."""
    from airflow_paimon.engine.files import storage

    return json.loads(storage.read_bytes(result_uri))


@dataclass(frozen=True)
class Failure:
    """An error of the job side as it crosses back: its class's name, its message (redacted), and what its class
    declares (engine/errors.py): ``retryable``, whether a retry of the task can help; ``rewrite``, whether writing
    the run's batch again does."""

    type: str
    message: str
    retryable: bool = True  # not known to be permanent (a crash, a process that wrote no result)
    rewrite: bool = False

    @classmethod
    def of(cls, error: BaseException, secrets: list[str] | None = None) -> Failure:
        """``error`` as it crosses, with every one of ``secrets`` (``secrets_of``) redacted from its message."""
        return cls(type(error).__name__, redact(str(error), secrets or []), is_retryable(error),
                   heals_by_rewrite(error))

    @property
    def text(self) -> str:
        return f"{self.type}: {self.message}"

    def to_result(self) -> dict:
        """The envelope a failed job or step leaves in its result file."""
        return {"error": self.text, "retryable": self.retryable, "rewrite": self.rewrite}

    @classmethod
    def from_result(cls, result: dict) -> Failure | None:
        """The failure in a result file's ``result``; None when it holds none (the job succeeded). A flag the result
        does not carry keeps its default: a failure not known to be permanent is retried."""
        if not isinstance(result.get("error"), str):
            return None
        error_type, _, message = result["error"].partition(": ")
        return cls(error_type, message, result.get("retryable") is not False, result.get("rewrite") is True)

    def exception(self, what: str, retried: Callable[[str], Exception], final: Callable[[str], Exception],
                  rewrite: Callable[[str], Exception] | None = None,
                  invalid: Callable[[str], Exception] | None = None) -> Exception:
        """The typed exception the Airflow side raises for this failure of ``what`` (its message ``what: <class>:
        <message>``): ``rewrite``'s when writing the run's batch again heals it, ``invalid``'s (with the message as
        it was, naming its table) for a ValidationError, else ``retried``'s or, when a retry cannot help,
        ``final``'s."""
        if self.rewrite and rewrite is not None:
            return rewrite(f"{what}: {self.text}")
        if self.type == "ValidationError" and invalid is not None:
            return invalid(self.message)
        return (retried if self.retryable else final)(f"{what}: {self.text}")


# A word in an option's name that makes its value a secret: fs.s3.secret-key, fs.oss.accessKeyId, token,
# dlf.security-token, fs.azure.account.key.<account>.dfs.core.windows.net, header.Authorization, ...
_SECRET_WORDS = {"secret", "password", "passwd", "pwd", "token", "key", "credential", "credentials", "signature",
                 "authorization", "sas"}
# ... unless a later word says the value names or locates one instead: token.provider (dlf, bear),
# dlf.token-loader, dlf.token-path, fs.s3a.aws.credentials.provider, ...
_NOT_THE_SECRET = {"provider", "providers", "type", "loader", "path", "file", "dir", "class", "factory", "uri",
                   "url", "endpoint", "enabled", "mode", "algorithm", "format"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # fs.oss.accessKeyId -> fs oss access Key Id


def is_secret_option(name: str) -> bool:
    """Whether the catalog option ``name`` holds a secret (its value is redacted), by the words of its name.
    ``table-default.*`` options are tables' options (table-default.bucket-key: a column), never secrets."""
    if name.startswith("table-default."):
        return False
    words = [w.lower() for w in _WORD.findall(name)]
    return any(w in _SECRET_WORDS and not _NOT_THE_SECRET.intersection(words[i + 1:]) for i, w in enumerate(words))


def secrets_of(spec: dict) -> list[str]:
    """Catalog option values that must not reach a log or an error message: those of options named like a
    secret (is_secret_option), longest first."""
    options = spec.get("catalog_options") or {}
    found = {str(v) for k, v in options.items() if v and is_secret_option(str(k))}
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` (a log line, an error message; never a result's fields) with every secret replaced by ***."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
