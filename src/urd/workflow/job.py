"""Run a package command as a Snakemake job, from a thin ``script:``.

Each script in ``scripts/`` turns its ``snakemake`` object (inputs, outputs, params, wildcards)
into the argument list of one package command and calls :func:`run`. The commands stay plain
CLIs an auditor can run by hand; the workflow passes them Python values, never a shell string.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from ..core import receipt
from ..core.notice import MARK, marked
from . import sandbox

# Inside the sandbox: call the command's main with its arguments (no import of urd.workflow).
_INNER = ("import importlib, sys; m, _, f = sys.argv[1].partition(':'); "
          "sys.exit(int(getattr(importlib.import_module(m), f)(sys.argv[2:]) or 0))")


def run(snakemake, main: Callable[[list[str]], int], argv: Iterable) -> None:
    """``main(argv)`` with standard error, file descriptor 2 included, sent to the job's log.

    The descriptor is redirected, not just ``sys.stderr``, so what torch or a child process
    writes lands in the log too. Exits with the command's status: non-zero fails the job, and
    the profile's ``show-failed-logs`` prints the log.

    The command runs in a child process, in the job's sandbox (:mod:`.sandbox`, per ``sandbox``
    in config): it sees the declared inputs, writes the declared outputs, and nothing else of the
    working tree. When it succeeds, the runner writes the rule's ``receipt`` output, if it has one.
    """
    args = sandbox.flatten(argv)
    terminal = None
    if snakemake.log:
        log = Path(snakemake.log[0])
        log.parent.mkdir(parents=True, exist_ok=True)
        sys.stderr.flush()
        terminal = os.dup(2)  # Snakemake's own output, for the command's notices
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        sandboxed, label = sandbox.decide(sandbox.mode_of(snakemake.config))
    except sandbox.SandboxUnavailable as exc:
        print(f"{exc}\nrule {snakemake.rule}: not run", file=sys.stderr)
        sys.exit(2)
    if not sandboxed:
        # a child process even so: the plug-in in it cannot reach the runner, which writes the receipt
        sys.stderr.flush()
        status = subprocess.run(_inner(main, args), stdin=subprocess.DEVNULL, stdout=2,
                                env={**os.environ, sandbox.ENV: label}, preexec_fn=_die_with_parent).returncode
    else:
        status = _sandboxed(snakemake, main, args)
    if status == 0:
        _write_receipt(snakemake, label)
    if terminal is not None:
        sys.stderr.flush()
        for line in marked(Path(snakemake.log[0]).read_text(errors="replace")):
            os.write(terminal, f"{MARK}{line} (rule {snakemake.rule}; log {snakemake.log[0]})\n".encode())
    sys.exit(status)


def _inner(main: Callable, args: list[str]) -> list[str]:
    return [sys.executable, "-c", _INNER, f"{main.__module__}:{main.__name__}", *args]


def _die_with_parent() -> None:
    """In the child, before the command: killed when the runner dies (as bwrap's --die-with-parent),
    so a killed job leaves no command running behind it."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _write_receipt(snakemake, label: str) -> None:
    """The rule's ``receipt`` output, where it declares one (urd.core.receipt): written here, after
    the command has exited, over whatever the command left at that path."""
    path = getattr(snakemake.output, "receipt", None)
    if path is not None:
        outputs = [o for o in sandbox.flatten(snakemake.output) if o != str(path)]
        receipt.write(path, snakemake.rule, label, outputs)


def _sandboxed(snakemake, main: Callable, args: list[str]) -> int:
    plan = sandbox.plan_for(snakemake)
    plan.stage()
    try:
        inner = _inner(main, args)
        sys.stderr.flush()
        # session B's checkpoint: opened here, outside, and handed over as a descriptor (not mounted)
        hidden = os.open(plan.hidden, os.O_RDONLY) if plan.hidden is not None else None
        try:
            # stdout goes to the log too: a job must not leave anything where the next one could read it
            code = subprocess.run(plan.command(inner, hidden), stdin=subprocess.DEVNULL, stdout=2,
                                  pass_fds=() if hidden is None else (hidden,)).returncode
        finally:
            if hidden is not None:
                os.close(hidden)
        if code == 0:
            try:
                stray = plan.collect()
            except sandbox.SandboxViolation as exc:
                print(f"{exc}; rule {snakemake.rule}: outputs not kept", file=sys.stderr)
                return 1
            if stray:
                print(f"urd sandbox: rule {snakemake.rule} wrote beside its declared outputs, discarded: "
                      f"{', '.join(stray[:10])}", file=sys.stderr)
        elif snakemake.log:
            missing = sandbox.undeclared(Path(snakemake.log[0]).read_text(errors="replace"))
            if missing:
                print(f"urd sandbox: rule {snakemake.rule} reached for paths its rule does not declare: "
                      f"{', '.join(missing[:10])} (declare them as inputs or outputs of the rule; the job sees "
                      "nothing else)", file=sys.stderr)
        return code
    finally:
        plan.cleanup()
