"""Provenance: digests of the code, config and data an output was computed from.

Snakemake does not rerun a rule when the Python it calls changes, so each rule takes
``code_digest(entry module, ...)`` as a param. The digest covers the entry's import closure, read
from the source (nothing is imported, so the DAG is built without torch): every module of this
package, or beside a plug-in, that an ``import`` statement anywhere in the closure names, each
package's ``__init__``, and the data files packaged beside them. Editing a module reruns exactly
the jobs whose entry reaches it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import platform
import re
import subprocess
import sys
import sysconfig
from functools import cache
from pathlib import Path

from .io import sha256_file

PACKAGES = ("snakemake", "rwkv", "torch", "numpy", "anthropic", "httpx", "huggingface_hub", "pyyaml")
URD_DIR = Path(__file__).resolve().parent.parent
DATA_SUFFIXES = (".json", ".md", ".yaml", ".txt")
_INSTALLED = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")}


def code_digest(*entries: str) -> str:
    """SHA-256 over (module name or data path, bytes) of everything :func:`code_closure` finds."""
    h = hashlib.sha256()
    for key, path in code_closure(*entries):
        h.update(key.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def code_closure(*entries: str) -> tuple[tuple[str, Path], ...]:
    """(key, file) for each module the entries reach by import statements, plus package data.

    Modules outside this package are followed only when they sit beside an entry that is not
    installed (a plug-in such as ``my_systems``): the interpreter and installed libraries are
    pinned by version, not digested.
    """
    local_dirs = {URD_DIR}
    for name in entries:
        path = _locate(name, None, entry=True)
        if path is None:
            raise ModuleNotFoundError(f"code_digest: no module named {name!r}")
        if name.split(".")[0] != "urd" and not _installed(path):
            local_dirs.add(_import_root(name, path))
    found: dict[str, Path] = {}
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = _locate(name, local_dirs, entry=name in entries)
        if path is None:
            continue
        found[name] = path
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)  # importing a.b runs a/__init__.py
        todo.extend(_imports(name, path))
    out = sorted((name.replace(".", "/") + ("/__init__.py" if p.name == "__init__.py" else ".py"), p) for name, p in found.items())
    for name, p in list(found.items()):
        if p.name == "__init__.py":
            out.extend(_package_data(name, p.parent))
    return tuple(sorted(out))


def _locate(name: str, local_dirs: set[Path] | None, *, entry: bool = False) -> Path | None:
    return _located(name, None if local_dirs is None else frozenset(local_dirs), entry, tuple(sys.path))


@cache  # every rule's digest walks much the same graph (keyed on sys.path, which finds the modules)
def _located(name: str, local_dirs: frozenset[Path] | None, entry: bool, search: tuple[str, ...]) -> Path | None:
    """The source file of module ``name``, found without importing anything; None outside local_dirs.

    Only a top-level name goes through ``find_spec`` (which imports the parents of a dotted
    name); submodules are looked up as files below it.
    """
    top, *rest = name.split(".")
    if top == "urd":
        base = URD_DIR
    else:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        if spec is not None and spec.origin is None and spec.submodule_search_locations:
            base = Path(next(iter(spec.submodule_search_locations))).resolve()  # a folder without __init__
        elif spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        else:
            base = Path(spec.origin).resolve()
            base = base.parent if base.name == "__init__.py" else base.with_suffix("")
    base = base.joinpath(*rest)
    path = base / "__init__.py" if (base / "__init__.py").is_file() else base.with_suffix(".py")
    if not path.is_file():
        return None
    if local_dirs is not None and not any(path.is_relative_to(d) for d in local_dirs):
        return None
    if top != "urd" and not entry and _installed(path):
        return None  # a library is pinned by its version, even when its folder sits below a plug-in
    return path


def _import_root(name: str, path: Path) -> Path:
    """The directory on sys.path that module ``name`` at ``path`` was found under."""
    depth = name.count(".") + (1 if path.name == "__init__.py" else 0)
    return path.parents[depth]


def _installed(path: Path) -> bool:
    return any(path.is_relative_to(d) for d in _INSTALLED)


# An import statement, at any indentation (function-level imports count): parsing only these
# lines is ten times faster than walking each module's whole tree, which every Snakemake
# invocation paid once per rule's digest.
_IMPORT = re.compile(r"^[ \t]*(from[ \t]+\.*[\w.]*[ \t]+import[ \t]+(?:\([^)]*\)|(?:\\\n|[^\n])*)|import[ \t]+(?:\\\n|[^\n])*)",
                     re.M)


@cache
def _imports(name: str, path: Path) -> tuple[str, ...]:
    """Every module an import statement in ``path`` may load (function-level imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for match in _IMPORT.finditer(path.read_text(encoding="utf-8", errors="replace")):
        try:
            statements = ast.parse(match.group(1).strip(), filename=str(path)).body
        except SyntaxError:  # a line in a string that only looks like an import
            continue
        for node in statements:
            if isinstance(node, ast.Import):
                out.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module
                out.append(mod)
                out.extend(f"{mod}.{a.name}" for a in node.names if a.name != "*")  # submodules
    return tuple(out)


def _package_data(name: str, folder: Path) -> list[tuple[str, Path]]:
    """Data files read at run time: in the package folder and its non-package subfolders."""
    out = []
    for p in sorted(folder.rglob("*")):
        if p.suffix not in DATA_SUFFIXES or not p.is_file() or "__pycache__" in p.parts:
            continue
        sub = p.parent
        if sub != folder and any((d / "__init__.py").is_file() for d in [sub, *sub.parents] if d.is_relative_to(folder) and d != folder):
            continue  # belongs to a subpackage: digested when that package is reached
        out.append((name.replace(".", "/") + "/" + p.relative_to(folder).as_posix(), p))
    return out


COMMIT_ENV = "URD_GIT_COMMIT"  # set by the job wrapper for a sandboxed job, which cannot see .git
SANDBOX_ENV = "URD_SANDBOX"  # set by the job wrapper: "bwrap", or "off (<why>)" (urd.workflow.sandbox)
NOT_BY_THE_WORKFLOW = "off (not run by the workflow)"


def sandbox_label() -> str:
    """How this process was run: in the job sandbox ("bwrap"), or not and why."""
    return os.environ.get(SANDBOX_ENV, NOT_BY_THE_WORKFLOW)


def git_commit(cwd: str | Path = ".") -> str | None:
    """HEAD of the checkout, with '-dirty' when tracked files differ; None outside git."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    from importlib import metadata  # here, not at import: every job's wrapper imports this module

    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def file_digests(paths: list[str | Path]) -> dict[str, str]:
    return {str(p): sha256_file(p) for p in paths}
