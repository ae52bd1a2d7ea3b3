"""Create and pack a job environment: a venv with this provider (its own files, no dependencies: the job side
needs no Airflow) and the requirements of its ``jobs`` extra, read from the installed provider's metadata, installed
under the constraints file that ships beside this module (``constraints.txt``: every version the job side needs,
made from the project's uv.lock), so that job environments created on different days hold the same versions."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

DIST = "airflow-paimon"
EXTRA = "jobs"
CONSTRAINTS = Path(__file__).with_name("constraints.txt")


def constraints_python(constraints: Path) -> str | None:
    """The Python versions a constraints file was checked on (its ``# python: SPEC`` line), if it says."""
    for line in constraints.read_text().splitlines():
        if line.startswith("# python:"):
            return line.partition(":")[2].strip()
    return None


def _check_python(python: str, constraints: Path) -> None:
    """Refuse a Python the constraints file was not made for (its versions have no wheels there)."""
    from packaging.specifiers import SpecifierSet

    spec = constraints_python(constraints)
    if spec is None:
        return
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             check=True, capture_output=True, text=True).stdout.strip()
    if version not in SpecifierSet(spec):
        raise ValueError(f"{constraints} pins versions for Python {spec}, not {version}: give --python with one of "
                         "those, or --constraint FILE with versions of your own for this Python")


def jobs_requirements() -> list[str]:
    """The ``jobs`` extra's requirements of the installed provider, without their markers."""
    from packaging.requirements import Requirement

    found = []
    for line in metadata.requires(DIST) or []:
        req = Requirement(line)
        if req.marker is not None and req.marker.evaluate({"extra": EXTRA}) and not req.marker.evaluate({"extra": ""}):
            req.marker = None
            found.append(str(req))
    if not found:
        raise RuntimeError(f"the installed {DIST} declares no '{EXTRA}' extra: reinstall it")
    return found


def provider_source() -> str:
    """What to install the provider itself from: the checkout (project directory) this package runs from, else
    the wheel or directory the installed distribution was installed from, else its version from the index."""
    dist = metadata.distribution(DIST)
    project = Path(__file__).resolve().parents[2]
    if (project / "pyproject.toml").exists() and (project / "airflow_paimon").is_dir():
        return str(project)
    direct = dist.read_text("direct_url.json")
    if direct:
        url = json.loads(direct).get("url", "")
        if url.startswith("file://") and Path(url[len("file://"):]).exists():
            return url[len("file://"):]
    return f"{DIST}=={dist.version}"


def _installer(python: Path) -> list[str]:
    """uv when this environment has it (an order of magnitude faster), else the new venv's own pip."""
    uv = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if uv:
        # --no-config: a pyproject.toml or uv.toml in the working directory (overrides, indexes) is not the job env's.
        # --compile-bytecode (pip's default, not uv's): each step and job imports pypaimon, pandas and pyarrow in a
        # new process; from source, where .pyc files cannot be written, that took 20-30 s instead of 1-2 s.
        return [uv, "pip", "install", "--no-config", "--compile-bytecode", "--python", str(python), "--quiet"]
    return [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]


def create(path: Path, python: str | None = None, provider: str | None = None,
           constraint: Path | None = None) -> Path:
    """A venv at ``path`` (``python``: its interpreter, default this one) with the provider and its job side,
    installed under ``constraint`` (default: the constraints file shipped with the provider); its interpreter's
    path. ``--copies``: bin/python is a file, not a link into this machine's Python, so the venv packs
    (``pack``)."""
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not empty: give a new directory")
    constraints = Path(constraint or CONSTRAINTS).resolve()
    if not constraints.is_file():
        raise FileNotFoundError(f"constraints file {constraints} not found")
    base = python or sys.executable
    _check_python(base, constraints)  # before the venv: a refused Python leaves the directory as it was
    subprocess.run([base, "-m", "venv", "--copies", str(path)], check=True)
    env_python = path / "bin" / "python"
    install = _installer(env_python)
    # the provider without its dependencies: they are Airflow's side; the job side needs only the extra's
    subprocess.run([*install, "--no-deps", provider or provider_source()], check=True)
    subprocess.run([*install, "--constraint", str(constraints), *jobs_requirements()], check=True)
    check = [str(env_python), "-c", "import airflow_paimon.engine.table.table, pypaimon, rocksdict, pyroaring"]
    subprocess.run(check, check=True)
    return env_python


def _relocated_script(data: bytes, prefix: str) -> bytes:
    """A bin/ script whose shebang names the venv's absolute path, pointed at whatever python is on PATH."""
    first, _, rest = data.partition(b"\n")
    if first.startswith(b"#!") and prefix.encode() in first:
        return b"#!/usr/bin/env python3\n" + rest
    return data


def pack(path: Path, archive: Path) -> Path:
    """A tar.gz of the venv at ``path`` whose members sit at the archive's root (``spark.archives=ARCHIVE#env``
    unpacks it as ./env); bin/ scripts lose their absolute shebangs. The venv's pyvenv.cfg still names the base
    Python's directory (``home``): the machines that unpack it need that Python at the same path, as with
    venv-pack."""
    python = path / "bin" / "python"
    if not (path / "pyvenv.cfg").exists() or not python.exists():
        raise FileNotFoundError(f"{path} is not a venv (no pyvenv.cfg or bin/python): create it with "
                                "`python -m airflow_paimon.job_env create PATH`")
    if python.is_symlink():
        raise ValueError(f"{python} is a symlink: create the venv with --copies (job_env create does)")
    prefix = str(path.resolve())
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:  # level 1: 3x faster, a few % bigger
        for item in sorted(path.rglob("*")):
            name = item.relative_to(path).as_posix()
            if "__pycache__" in item.parts and item.suffix != ".pyc":
                continue
            info = tar.gettarinfo(str(item), arcname=name)
            if item.parent == path / "bin" and info.isfile() and item.stat().st_size < 1 << 20:
                data = _relocated_script(item.read_bytes(), prefix)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            elif info.isfile():
                with open(item, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return archive
