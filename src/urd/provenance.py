"""Provenance: digests of the code, config and data an output was computed from.

Snakemake does not rerun a `shell:` rule when the Python it calls changes, so each rule takes
`code_digest(...)` of the package modules it uses as a param: a code change reruns what it affects.
"""

from __future__ import annotations

import hashlib
import importlib.util
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from .io import sha256_file

PACKAGES = ("snakemake", "rwkv", "torch", "numpy", "anthropic", "httpx", "pyyaml")


def _module_files(name: str) -> list[Path]:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(name)
    origin = Path(spec.origin)
    if spec.submodule_search_locations:  # a package: every .py below it
        return sorted(origin.parent.rglob("*.py"))
    return [origin]


def code_digest(*modules: str) -> str:
    """SHA-256 over (path relative to the package root, bytes) of each module's source files."""
    h = hashlib.sha256()
    root = Path(importlib.util.find_spec("urd").origin).parent.parent
    files = sorted({f for m in modules for f in _module_files(m)})
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def git_commit(cwd: str | Path = ".") -> str | None:
    """HEAD of the checkout, with '-dirty' when tracked files differ; None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def file_digests(paths: list[str | Path]) -> dict[str, str]:
    return {str(p): sha256_file(p) for p in paths}
