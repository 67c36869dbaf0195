"""Shared fixtures: the repository root and a throwaway copy of the workflow to run Snakemake in."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

# One session-wide SLURM test cluster for every module that asks for it (a module importing the
# fixture itself would get its own, and a second cluster cannot start while the first runs).
from slurm_cluster import slurm_cluster  # noqa: F401

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# The suite runs on two xdist workers (pyproject's addopts). Each worker's torch then keeps to one
# thread: two workers' thread pools spinning on two cores made one batch test 27x slower.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")


def pytest_collection_modifyitems(items):
    """The files with the most tests that run Snakemake start first, and in each file those
    tests first: xdist hands out whole files in this order (`--no-loadscope-reorder`), so the
    long ones overlap instead of trailing at the end (the order of the rest is kept)."""
    def file(item):
        return item.nodeid.split("::")[0]

    slow = Counter(file(item) for item in items if item.get_closest_marker("slow"))
    first = {}
    for i, item in enumerate(items):
        first.setdefault(file(item), i)
    items.sort(key=lambda item: (-slow[file(item)], first[file(item)], item.get_closest_marker("slow") is None))


_RUNNING = {"slow": True}


@pytest.fixture(autouse=True)
def _note_the_slow_mark(request):
    """Lets the Snakemake runner refuse a test that is not marked slow (`-m "not slow"` must skip
    every test that runs Snakemake)."""
    _RUNNING["slow"] = request.node.get_closest_marker("slow") is not None
    yield
    _RUNNING["slow"] = True


def copy_workflow(dest: Path) -> Path:
    from urd.workflow.files import copy_workflow as copy

    return copy(REPO, dest)


#: The reduced run the workflow tests build on: one episode, two queries a cell.
REDUCED = ["--config", "evaluate_episodes=1", "evaluate_queries=2"]


@pytest.fixture(scope="session")
def vanilla_built(tmp_path_factory):
    """One reduced build of `vanilla` on tiny in a fresh copy (data, checkpoint, prefill, control,
    cells, summary), for the tests that add to it; each works on its own copy (:func:`copy_of`).
    Built once a run: the xdist workers share it (the first to ask builds it, under a lock)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    home, wf = root / "vanilla", root / "vanilla" / "wf"
    with open(root / "vanilla.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "built").exists():
            shutil.rmtree(home, ignore_errors=True)
            copy_workflow(wf)
            snakemake(wf, "results/urd/tiny/summary.json", *REDUCED, "systems=[vanilla]", check=True)
            (home / "built").write_text("")
    return wf


def readme_plugin() -> str:
    """The documented example system (docs/rung1.md, my_systems.py), as a reader would copy it."""
    block = re.search(r"```python\n(# my_systems\.py\n.*?)```", (REPO / "docs/rung1.md").read_text(), re.S)
    assert block, "docs/rung1.md lost its example system"
    return block.group(1)


def copy_of(built: Path, dest: Path) -> Path:
    return shutil.copytree(built, dest, symlinks=True)  # mtimes kept: Snakemake sees it up to date


def needs_sandbox():
    """A mark for the tests that need the job sandbox: skipped where there is none, a failure
    where CI says there must be one (URD_REQUIRE_SANDBOX)."""
    from urd.workflow import sandbox

    why = sandbox.unavailable()
    if why is not None and os.environ.get("URD_REQUIRE_SANDBOX"):
        raise AssertionError(f"URD_REQUIRE_SANDBOX is set but {why}")
    return pytest.mark.skipif(why is not None, reason=f"no job sandbox here: {why}")


@pytest.fixture()
def workflow(tmp_path) -> Path:
    """A fresh copy of the workflow (no data, no results) in a temporary directory."""
    return copy_workflow(tmp_path / "wf")


def snakemake(
    workdir: Path, *args: str, check: bool = False, env: dict | None = None, timeout: float = 900
) -> subprocess.CompletedProcess:
    """The one way tests run Snakemake: this interpreter, this checkout's package, 2 cores."""
    if not _RUNNING["slow"]:
        raise AssertionError("a test that runs Snakemake must be marked slow (pytest.mark.slow)")
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--nolock", *args]
    env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(REPO / "src")]))
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> Path:
    from urd.backbone.tiny import write_tiny_checkpoint

    return Path(write_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "tiny.pth", seed=20260807))


@pytest.fixture(scope="session")
def tiny_backbone(tiny_checkpoint):
    from urd.backbone.adapter import Backbone

    return Backbone.load(tiny_checkpoint)


@pytest.fixture(scope="session")
def urd_config():
    from urd.core.config import load_config

    return load_config(REPO / "config/config.yaml", REPO / "config/schema.yaml")
