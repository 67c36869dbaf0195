"""The files a working copy of the workflow needs (the package itself is installed): what a
test or a benchmark copies into a throwaway folder to run Snakemake there without touching the
clone's results."""

from __future__ import annotations

import shutil
from pathlib import Path

WORKFLOW_FILES = ("Snakefile", "rules", "scripts", "envs", "config", "calibration", "profiles", "weights")


def copy_workflow(root: str | Path, dest: str | Path) -> Path:
    """Copy the workflow files of the clone at `root` into `dest` (created); returns dest."""
    root, dest = Path(root), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = root / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        elif src.exists():
            shutil.copy2(src, dest / name)
    return dest
