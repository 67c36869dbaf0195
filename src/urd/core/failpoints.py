"""Named points where a test can kill the process, to prove that a kill anywhere loses nothing.

``URD_FAILPOINT=NAME:N`` sends SIGKILL to this process at the N-th time it passes the point
NAME (N defaults to 1). Unset, a point costs one dictionary lookup. The points:

* ``io.replace``: in an atomic write, the temporary file written and synced, not yet renamed;
* ``llm.settled``: a live call's bill written to the spend ledger, its reply not yet used.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "URD_FAILPOINT"
_hits: dict[str, int] = {}


def failpoint(name: str) -> None:
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
