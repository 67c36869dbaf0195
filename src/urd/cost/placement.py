"""Where a tuning job will run, decided when the DAG is built, so the spend line prices it there.

- ``cluster``: an executor other than the local one (``--profile slurm``): the tuning rule's
  ``gpu=1`` sends the job to a GPU node, billed as GPU seconds at the GPU's speed.
- ``cuda``: the local executor on a machine that shows an NVIDIA GPU: GPU seconds, the GPU's speed.
- ``cpu``: the local executor with no GPU: CPU seconds at the CPU's measured training speed.

A dry run hands its jobs to Snakemake's own dry-run executor, so the executor a run asks for is
read from its command line as Snakemake itself parses it (profiles included); a run started
otherwise (the Python API) counts as local.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

PLACES = ("cpu", "cuda", "cluster")
LOCAL = ("local", "dryrun", "touch", None)


def executor_asked(argv: Sequence[str]) -> str | None:
    """The executor a `snakemake` command line asks for (after its profiles), or None."""
    from snakemake.cli import parse_args

    try:
        _, args = parse_args(list(argv))
    except (SystemExit, Exception):  # not a snakemake command line: the API, a test harness
        return None
    return getattr(args, "executor", None)


def cuda_visible(environ: dict | None = None, driver: Path = Path("/proc/driver/nvidia/gpus")) -> bool:
    """Whether this machine shows an NVIDIA GPU to its processes (the driver lists one and
    CUDA_VISIBLE_DEVICES does not hide them all), read without importing torch."""
    env = os.environ if environ is None else environ
    if env.get("CUDA_VISIBLE_DEVICES", "unset").strip() in ("", "-1"):
        return False
    return driver.is_dir() and any(driver.iterdir())


def placement(argv: Sequence[str] | None, cuda: bool | None = None) -> str:
    """`cluster`, `cuda` or `cpu` (see the module's docstring)."""
    if argv is not None and executor_asked(argv) not in LOCAL:
        return "cluster"
    return "cuda" if (cuda_visible() if cuda is None else cuda) else "cpu"


def tuning_device(place: str) -> str:
    """The device a tuning job runs on where it is placed: `gpu` or `cpu`."""
    if place not in PLACES:
        raise ValueError(f"placement {place!r}: one of {', '.join(PLACES)}")
    return "cpu" if place == "cpu" else "gpu"
