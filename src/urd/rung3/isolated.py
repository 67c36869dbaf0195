"""A system's context() for one episode, computed in a forked process of its own.

The child builds the system afresh, calls context(fiche, header) and writes back plain data: the
text, the state tensors as raw arrays (numpy's format, no pickle) and the context's key as JSON.
The parent never unpickles what the child wrote, and a child that fails is reported with the
error it raised. What the system kept on itself, its class or its module dies with the child.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback

from ..core.errors import UrdError
from ..systems.base import Context


def _encode(name: str, ctx: Context | None) -> bytes:
    import numpy as np

    head = {"name": name, "none": ctx is None}
    blobs: list[bytes] = []
    if ctx is not None:
        head.update(text=ctx.text, key=json.loads(json.dumps(ctx.key, default=str)) if ctx.key is not None else None,
                    state=None)
        if ctx.state is not None:
            head["state"] = []
            for t in ctx.state:
                buf = io.BytesIO()
                np.save(buf, t.detach().cpu().float().numpy() if hasattr(t, "detach") else np.asarray(t),
                        allow_pickle=False)
                head["state"].append({"dtype": str(getattr(t, "dtype", "")), "bytes": len(buf.getvalue())})
                blobs.append(buf.getvalue())
    header = json.dumps(head).encode()
    return len(header).to_bytes(8, "big") + header + b"".join(blobs)


def _decode(data: bytes) -> tuple[str, Context | None]:
    import numpy as np

    n = int.from_bytes(data[:8], "big")
    head = json.loads(data[8:8 + n])
    if head.get("error"):
        raise UrdError(head["error"])
    if head["none"]:
        return head["name"], None
    state, at = None, 8 + n
    if head["state"] is not None:
        import torch

        state = []
        for entry in head["state"]:
            array = np.load(io.BytesIO(data[at:at + entry["bytes"]]), allow_pickle=False)
            at += entry["bytes"]
            tensor = torch.from_numpy(array)
            dtype = getattr(torch, entry["dtype"].removeprefix("torch."), None)
            state.append(tensor.to(dtype) if isinstance(dtype, torch.dtype) else tensor)
    key = tuple(head["key"]) if isinstance(head["key"], list) else head["key"]
    return head["name"], Context(head["text"], state, key)


def context(build, fiche: bytes, header: str, episode: int) -> tuple[str, Context | None]:
    """(the system's name, its context for this episode), computed in a child process."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: build, ask, write, leave without running the parent's cleanup
        os.close(r)
        try:
            system = build()
            data = _encode(system.name, system.context(fiche, header))
        except BaseException as exc:  # reported by the parent, naming the episode
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            head = json.dumps({"error": f"episode {episode}: the system's context() failed: {detail}"}).encode()
            data = len(head).to_bytes(8, "big") + head
        with os.fdopen(w, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    if len(data) < 8:
        raise UrdError(f"episode {episode}: the process that built the system's context ended without one "
                       f"(status {status})")
    return _decode(data)
