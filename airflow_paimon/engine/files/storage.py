"""Small file operations on warehouse storage (local paths or any URI pyarrow.fs understands).

Index shards, staged commit messages and job results live here; publishing is always write-then-rename
so a reader never sees half a file.

Object stores are reached with the credentials of the ``paimon`` connection, not the process environment:
every process that opens the catalog (``engine.table.catalog.open_catalog``: the operator, the Spark driver, each
Python worker) calls ``configure(catalog_options)``, and a URI of a scheme pypaimon's own file IO serves
(s3, s3a, oss, gs, hdfs, ...) gets the pyarrow filesystem pypaimon builds from the same options
(``fs.s3.endpoint``, ``fs.s3.accessKeyId``, ``fs.s3.accessKeySecret``, ``fs.s3.path-style-access``, ...).
Before any ``configure`` call, ``FileSystem.from_uri`` (the environment's defaults) is the fallback.

``write_bytes_if_absent`` (snapshot files, index manifests) is the one operation pyarrow cannot do on an
object store: on S3 it is a conditional PUT through boto3, with the settings of the same pyarrow filesystem.
"""
from __future__ import annotations

import functools
import json
import os
import posixpath
import time
import uuid
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

from airflow_paimon.engine.errors import PaimonJobError

# URI schemes pypaimon serves with pyarrow's S3FileSystem (pyarrow_file_io.py): S3 and S3-compatible stores
S3_SCHEMES = ("s3", "s3a", "s3n")

_catalog_options: dict[str, str] = {}


def configure(catalog_options: dict) -> None:
    """Use ``catalog_options`` (the connection's) for every object-store URI of this process."""
    global _catalog_options
    options = {str(k): str(v) for k, v in catalog_options.items()}
    if options != _catalog_options:
        _catalog_options = options
        _object_store.cache_clear()


def options() -> dict[str, str]:
    """The options ``configure`` set: what a Spark closure carries to ``configure`` its Python worker with."""
    return dict(_catalog_options)


@functools.lru_cache(maxsize=16)
def _object_store(scheme: str, netloc: str, options_json: str) -> pafs.FileSystem:
    from pypaimon.common.options import Options
    from pypaimon.filesystem.pyarrow_file_io import PyArrowFileIO

    return PyArrowFileIO(f"{scheme}://{netloc}/", Options(json.loads(options_json))).filesystem


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in uri:
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    parsed = urlparse(uri)
    if parsed.scheme == "file" or not _catalog_options:
        return pafs.FileSystem.from_uri(uri)
    fs = _object_store(parsed.scheme, parsed.netloc, json.dumps(_catalog_options, sort_keys=True))
    return fs, f"{parsed.netloc}{parsed.path}"


def _acted_on(uri: str) -> tuple[str, str]:
    """(scheme, path) that ``filesystem(uri)`` makes of ``uri``, without opening a file system: pyarrow's
    ``from_uri`` percent-decodes the path and drops a query or fragment (``file:///wh/t%2F..`` is ``/wh``, and
    ``s3://b/t#x`` is ``b/t``); our object-store route keeps the path as written, less query and fragment."""
    if "://" not in uri:
        return "", os.path.abspath(uri)
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return "file", unquote(parsed.path)
    path = f"{parsed.netloc}{parsed.path}"
    return parsed.scheme, path if _catalog_options else unquote(path)


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *[p.strip("/") for p in parts]])


def exists(uri: str) -> bool:
    fs, path = filesystem(uri)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def read_bytes(uri: str) -> bytes:
    fs, path = filesystem(uri)
    with fs.open_input_stream(path) as f:
        return f.read()


def write_bytes_atomic(uri: str, data: bytes) -> None:
    """Write to a temporary sibling, then rename over the target."""
    fs, path = filesystem(uri)
    parent = path.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with fs.open_output_stream(tmp) as f:
        f.write(data)
    fs.move(tmp, path)


def upload(local_path: str, uri: str) -> None:
    """Copy a local file to storage atomically."""
    fs, path = filesystem(uri)
    parent = path.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    pafs.copy_files(local_path, tmp, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    fs.move(tmp, path)


def download(uri: str, local_path: str) -> None:
    fs, path = filesystem(uri)
    pafs.copy_files(path, local_path, source_filesystem=fs, destination_filesystem=pafs.LocalFileSystem())


def delete_dir(uri: str) -> None:
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)


def move(src_uri: str, dst_uri: str) -> None:
    fs, src = filesystem(src_uri)
    _, dst = filesystem(dst_uri)
    fs.create_dir(dst.rsplit("/", 1)[0], recursive=True)
    fs.move(src, dst)


def is_dir(uri: str) -> bool:
    fs, path = filesystem(uri)
    return fs.get_file_info(path).type == pafs.FileType.Directory


def list_dir(uri: str) -> list[str]:
    """Names directly under ``uri`` (empty if it does not exist)."""
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return []
    return [info.base_name for info in fs.get_file_info(pafs.FileSelector(path))]


def file_info(uri: str) -> pafs.FileInfo:
    """Type, size and modification time of ``uri`` in one call."""
    fs, path = filesystem(uri)
    return fs.get_file_info(path)


def size(uri: str) -> int:
    return file_info(uri).size


def sha256(uri: str) -> str:
    import hashlib

    fs, path = filesystem(uri)
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def mtime(uri: str) -> float:
    fs, path = filesystem(uri)
    info = fs.get_file_info(path)
    return info.mtime.timestamp() if info.mtime else 0.0


def newest_mtime(uri: str) -> float:
    """Epoch seconds of the newest modification under ``uri`` (the directory itself and everything below it)."""
    fs, path = filesystem(uri)
    infos = [fs.get_file_info(path)]
    if infos[0].type == pafs.FileType.Directory:
        infos += fs.get_file_info(pafs.FileSelector(path, recursive=True))
    return max((i.mtime.timestamp() for i in infos if i.mtime is not None), default=0.0)


def delete_file(uri: str) -> None:
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_file(path)


class NoExclusiveCreateError(PaimonJobError):
    """The store has no create-if-absent this provider can use: nothing was written."""

    retryable: bool = False  # the store's kind does not change between tries


def creates_exclusively(uri: str) -> bool:
    """True if ``write_bytes_if_absent(uri, ...)`` lets exactly one of any number of racing creators win."""
    scheme = urlparse(uri).scheme if "://" in uri else ""
    return scheme in ("", "file") or scheme in S3_SCHEMES


def write_bytes_if_absent(uri: str, data: bytes) -> bool:
    """Create ``uri`` with ``data`` unless it exists; False if it did (the existing file is left alone).

    Exactly one of any number of concurrent creators, in any process, gets True: on a local file system a
    hard link creates the name (it fails if the name exists); on S3 a conditional PUT (``If-None-Match: *``)
    does, which the store refuses (412) if the key exists. Any other store raises NoExclusiveCreateError
    with nothing written: a check-then-write there would let two creators both believe they won."""
    if not creates_exclusively(uri):
        raise NoExclusiveCreateError(
            f"{uri}: {urlparse(uri).scheme}:// has no create-if-absent this provider can use (local paths, "
            f"file:// and {'/'.join(S3_SCHEMES)}:// with a conditional PUT have); nothing written")
    fs, path = filesystem(uri)
    if isinstance(fs, pafs.LocalFileSystem):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # hidden: a directory listing (pypaimon's of snapshot-N files) never parses it
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
    return _s3_put_if_absent(fs, path, data)


_CONFLICT_RETRIES = 10  # S3's 409 ConditionalRequestConflict: another conditional write of the key in flight


def _s3_put_if_absent(fs: pafs.S3FileSystem, path: str, data: bytes) -> bool:
    from botocore.exceptions import ClientError

    bucket, key = path.split("/", 1)
    client = _s3_client(fs)
    for attempt in range(_CONFLICT_RETRIES + 1):
        try:
            client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except ClientError as e:
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = e.response.get("Error", {}).get("Code")
            if status == 412 or code == "PreconditionFailed":
                # the key exists. Ours only if botocore re-sent a PUT that had landed (its response lost):
                # then the object holds exactly our bytes, which no other creator writes
                with fs.open_input_stream(path) as f:
                    return f.read() == data
            if (status == 409 or code == "ConditionalRequestConflict") and attempt < _CONFLICT_RETRIES:
                time.sleep(0.05 * (attempt + 1))
                continue
            raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def _s3_client(fs: pafs.S3FileSystem):
    """A boto3 S3 client with the settings of ``fs`` (endpoint, keys, region, addressing): the arguments
    pyarrow rebuilds ``fs`` from when pickling it."""
    settings = fs.__reduce__()[1][0]
    names = ("access_key", "secret_key", "session_token", "region", "scheme", "endpoint_override",
             "force_virtual_addressing")
    return _s3_client_of(json.dumps({n: settings.get(n) for n in names}, sort_keys=True), os.getpid())


@functools.lru_cache(maxsize=16)
def _s3_client_of(settings_json: str, pid: int):  # pid: a forked worker builds its own (no shared sockets)
    import boto3
    from botocore.config import Config

    s = json.loads(settings_json)
    endpoint = s["endpoint_override"] or None
    if endpoint and "://" not in endpoint:
        endpoint = f"{s['scheme'] or 'https'}://{endpoint}"
    # as pyarrow: virtual-hosted addressing on AWS, path style on another endpoint unless forced virtual
    addressing = "virtual" if (endpoint is None or s["force_virtual_addressing"]) else "path"
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=s["region"] or None, aws_access_key_id=s["access_key"] or None,
        aws_secret_access_key=s["secret_key"] or None, aws_session_token=s["session_token"] or None,
        config=Config(s3={"addressing_style": addressing}, retries={"mode": "standard"}))


class EscapeError(ValueError):
    """A delete aimed outside the directory it is confined to; nothing was deleted."""

    retryable: bool = False  # a retry derives the same path and aims the same delete


def _resolved_path(uri: str) -> tuple[str, str]:
    scheme, path = _acted_on(uri)
    if scheme in ("", "file"):
        return scheme, os.path.realpath(path)
    return scheme, posixpath.normpath("/" + path)[1:]


def resolved(uri: str) -> str:
    """``uri`` as the file system acts on it: decoded as pyarrow decodes it, ``.``/``..`` segments resolved
    (and, for local paths, symlinks)."""
    scheme, path = _resolved_path(uri)
    return path if scheme in ("", "file") else f"{scheme}://{path}"


def within(root: str, uri: str) -> bool:
    """True if ``uri`` lies strictly inside ``root`` once both are resolved."""
    root, target = resolved(root).rstrip("/"), resolved(uri)
    return target.startswith(root + "/") and ".." not in target[len(root) + 1:].split("/")


def require_within(root: str, uri: str) -> None:
    if not within(root, uri):
        raise EscapeError(f"refusing to delete {uri}: not inside {root} (resolved: {resolved(uri)} vs "
                          f"{resolved(root)})")


def _confined(root: str, uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system of ``uri`` and the resolved path that was proven inside ``root``: a delete acts on
    exactly the path checked, never on a re-parse of the URI."""
    require_within(root, uri)
    fs, _ = filesystem(uri)
    return fs, _resolved_path(uri)[1]


def delete_dir_within(root: str, uri: str) -> None:
    """delete_dir, only if ``uri`` lies strictly inside ``root`` (else EscapeError, nothing deleted)."""
    fs, path = _confined(root, uri)
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)


def delete_file_within(root: str, uri: str) -> None:
    """delete_file, only if ``uri`` lies strictly inside ``root`` (else EscapeError, nothing deleted)."""
    fs, path = _confined(root, uri)
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_file(path)
