"""A job command for the sandbox tests: does what its arguments say, and reports what it saw."""

import json
import os
import socket
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """argv: OUT, then actions: read:PATH, write:PATH, stash:PATH (write, then report it),
    listdir:PATH, connect:HOST:PORT, env:NAME. Writes what each action found to OUT as JSON."""
    out, found = Path(argv[0]), {}
    for action in argv[1:]:
        verb, _, arg = action.partition(":")
        if verb == "fail-read":
            Path(arg).read_text()  # an undeclared read that is not caught: the job fails
        try:
            if verb == "read":
                found[action] = Path(arg).read_text()
            elif verb == "write":
                Path(arg).write_text("written")
                found[action] = "ok"
            elif verb == "listdir":
                found[action] = sorted(os.listdir(arg))
            elif verb == "connect":
                host, port = arg.rsplit(":", 1)
                with socket.create_connection((host, int(port)), timeout=2) as s:
                    found[action] = s.recv(64).decode()
            elif verb == "env":
                found[action] = os.environ.get(arg)
            elif verb == "symlink":  # leave a link among the outputs: ARG is its target
                out.unlink(missing_ok=True)
                out.symlink_to(arg)
                print(f"probe linked {out}", file=sys.stderr)
                return 0
            elif verb == "stdout":
                print(arg, flush=True)
                found[action] = "printed"
        except OSError as exc:
            found[action] = f"error: {type(exc).__name__}"
    out.write_text(json.dumps(found, sort_keys=True))
    print(f"probe wrote {out}", file=sys.stderr)
    return 0
