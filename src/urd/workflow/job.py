"""Run a package command as a Snakemake job, from a thin ``script:``.

Each script in ``scripts/`` turns its ``snakemake`` object (inputs, outputs, params, wildcards)
into the argument list of one package command and calls :func:`run`. The commands stay plain
CLIs an auditor can run by hand; the workflow passes them Python values, never a shell string.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path


def run(snakemake, main: Callable[[list[str]], int], argv: Iterable) -> None:
    """``main(argv)`` with standard error, file descriptor 2 included, sent to the job's log.

    The descriptor is redirected, not just ``sys.stderr``, so what torch or a child process
    writes lands in the log too. Exits with the command's status: non-zero fails the job, and
    the profile's ``show-failed-logs`` prints the log.
    """
    args = [str(a) for a in _flatten(argv)]
    if snakemake.log:
        log = Path(snakemake.log[0])
        log.parent.mkdir(parents=True, exist_ok=True)
        sys.stderr.flush()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    sys.exit(main(args))


def _flatten(items: Iterable) -> Iterable:
    for item in items:
        if isinstance(item, (list, tuple)):  # Snakemake's Namedlist is a list
            yield from _flatten(item)
        else:
            yield item
