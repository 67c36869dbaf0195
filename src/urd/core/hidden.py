"""A file a sandboxed job reads through a descriptor, its path absent from the sandbox.

Session B's jobs must see the model only through the metered handle, yet their process runs a
plug-in. So the job runner (:mod:`urd.workflow.job`) opens the checkpoint outside the sandbox,
does not mount it, and hands the open descriptor to the command with ``URD_HIDDEN_FILE`` =
``<fd>:<absolute path>``. The command verifies and loads it through the descriptor
(:func:`readable`, :func:`named`), then :func:`seal` closes it before any plug-in is imported:
from then on no path in the process leads to the file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV = "URD_HIDDEN_FILE"


def _hidden() -> tuple[int, str] | None:
    value = os.environ.get(ENV)
    if not value:
        return None
    fd, _, path = value.partition(":")
    return (int(fd), path) if fd.isdigit() and path else None


def readable(path: str | os.PathLike) -> str:
    """Where this process reads ``path``: the path itself, or ``/proc/self/fd/<fd>`` for the file
    the runner handed it as a descriptor."""
    hidden = _hidden()
    if hidden and os.path.abspath(path) == hidden[1]:
        return f"/proc/self/fd/{hidden[0]}"
    return os.fspath(path)


@contextlib.contextmanager
def named(path: str | os.PathLike) -> Iterator[str]:
    """A path with ``path``'s file name that opens its file, for loaders that take a name and add
    a suffix themselves (the ``rwkv`` package): ``path`` itself, or a link in a fresh temporary
    folder to the descriptor, removed on leaving."""
    where = readable(path)
    if where == os.fspath(path):
        yield where
        return
    with tempfile.TemporaryDirectory(prefix="urd-hidden-") as folder:
        link = Path(folder) / Path(path).name
        link.symlink_to(where)
        yield str(link)


def seal() -> None:
    """Close the descriptor and forget it: after this, nothing in the process reaches the file."""
    hidden = _hidden()
    os.environ.pop(ENV, None)
    if hidden:
        with contextlib.suppress(OSError):
            os.close(hidden[0])
