"""Functional correctness of code replies: each reply's function run against its task's asserts.

The code runs in a child interpreter (`python -I`, no site, no user paths) under a CPU-time and
memory limit, one reply after another, each in a fresh namespace and under a time limit of its
own; the job that calls this runs in the workflow's sandbox (docs/sandbox.md), which is what
keeps a reply's code away from anything but its scratch. A reply whose function is missing, fails
an assert, raises, loops or kills the child counts as incorrect, never as a crash of the job: the
child reports each result as it finishes, and a dead child is restarted after the reply it died on.
Correctness is reported apart from the conventions (urd.rung3.score).
"""

from __future__ import annotations

import json
import subprocess
import sys

PER_REPLY_S = 2
MEMORY_BYTES = 512 << 20

_CHILD = r"""
import ast, json, os, resource, signal, sys
# results go out on a copy of stdout; what a reply prints goes nowhere
out = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
sys.stdout = open(os.devnull, "w")
resource.setrlimit(resource.RLIMIT_AS, (%(mem)d, %(mem)d))
def alarm(*_):
    raise TimeoutError("time limit")
signal.signal(signal.SIGALRM, alarm)
for line in sys.stdin:
    item = json.loads(line)
    ok = False
    try:
        signal.alarm(%(per)d)
        tree = ast.parse(item["source"])
        names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        space = {"__name__": "reply"}
        exec(compile(tree, "reply", "exec"), space)
        space["f"] = space[names[0]]
        exec(item["asserts"], space)
        ok = True
    except BaseException:
        ok = False
    finally:
        signal.alarm(0)
    out.write(json.dumps(ok) + "\n")
    out.flush()
"""


def run(items: list[tuple[str, str]], per_reply_s: int = PER_REPLY_S) -> list[bool]:
    """For each (source, asserts): whether the source's first function, bound to `f`, passes."""
    results: list[bool] = []
    child = _CHILD % {"mem": MEMORY_BYTES, "per": per_reply_s}
    while len(results) < len(items):
        rest = items[len(results):]
        text = "".join(json.dumps({"source": s, "asserts": a}) + "\n" for s, a in rest)
        try:
            done = subprocess.run([sys.executable, "-I", "-c", child], input=text, capture_output=True, text=True,
                                  timeout=per_reply_s * len(rest) + 10).stdout
        except subprocess.TimeoutExpired as exc:
            done = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        got = []
        for line in done.splitlines():
            try:
                got.append(bool(json.loads(line)))
            except ValueError:
                break
        results += got[: len(rest)]
        if len(results) < len(items):
            results.append(False)  # the reply the child died on
    return results
