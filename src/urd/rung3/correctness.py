"""Functional correctness of code replies: each reply's function called on its task's cases.

Nothing a reply's code does can reach another reply's verdict or the job:
- a server process (`python -I`: no site, no user paths) forks one child per reply; the child
  starts a session of its own, drops its standard streams and every descriptor but its result
  pipe, sets CPU-time, memory, file-size and process limits, runs the reply's code and calls the
  function on each case's arguments, and writes back what came out (a value as JSON, or the
  exception's class name), nothing else;
- the server waits on that pipe for a wall-clock limit, then kills the child's whole process group
  whatever happened (a reply that forks, loops, catches the alarm or ignores signals is stopped);
- the verdict is made here, in the job, by comparing what came back with the expected values,
  which the child never sees. A result it cannot read (the child died, lied in the wrong shape,
  or said nothing) is a failure.
The job that calls this runs in the workflow's sandbox (docs/sandbox.md), which keeps the code
away from everything but its scratch. Correctness is reported apart from the conventions.
"""

from __future__ import annotations

import json
import subprocess
import sys

from ..data.rung3.code import Raises, Task

PER_REPLY_S = 2
MEMORY_BYTES = 512 << 20
RESULT_BYTES = 1 << 16

_SERVER = r"""
import ast, json, os, resource, select, signal, sys
PER, MEM, CAP = %(per)d, %(mem)d, %(cap)d
out = os.fdopen(os.dup(1), "w")
null = os.open(os.devnull, os.O_RDWR)

def child(item, w):
    os.setsid()
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, w)
    os.closerange(w + 1, 1 << 16)
    for limit, value in ((resource.RLIMIT_AS, MEM), (resource.RLIMIT_CPU, PER + 1), (resource.RLIMIT_FSIZE, 1 << 20),
                         (resource.RLIMIT_CORE, 0)):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass
    results = []
    try:
        tree = ast.parse(item["source"])
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        name = next((n for n in item["names"] if n in defined), defined[0] if defined else None)
        space = {"__name__": "reply"}
        exec(compile(tree, "reply", "exec"), space)
        f = space[name]
        for args in item["cases"]:
            try:
                value = f(*args)
                results.append(["ok", json.loads(json.dumps(value))])
            except BaseException as exc:
                results.append(["raised", type(exc).__name__])
    except BaseException:
        results = None
    os.write(w, json.dumps(results).encode()[:CAP])
    os._exit(0)

for line in sys.stdin:
    item = json.loads(line)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(item, w)
    os.close(w)
    data, ready = b"", True
    while ready and len(data) < CAP:
        ready, _, _ = select.select([r], [], [], PER)
        if ready:
            chunk = os.read(r, CAP)
            if not chunk:
                break
            data += chunk
    os.close(r)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    out.write(json.dumps(data.decode("utf-8", "replace")) + "\n")
    out.flush()
"""


def verdict(task: Task, raw: str) -> bool:
    """Whether what a child wrote back matches every case of the task."""
    try:
        results = json.loads(raw)
    except ValueError:
        return False
    if not isinstance(results, list) or len(results) != len(task.cases):
        return False
    for (_, expected), got in zip(task.cases, results):
        if not (isinstance(got, list) and len(got) == 2):
            return False
        if isinstance(expected, Raises):
            if got[0] != "raised" or not isinstance(got[1], str) or not got[1].startswith(expected.prefix):
                return False
        elif got[0] != "ok" or got[1] != json.loads(json.dumps(expected)) or type(got[1]) is not type(
                json.loads(json.dumps(expected))):
            return False
    return True


def run(items: list[tuple[str, Task]], per_reply_s: int = PER_REPLY_S) -> list[bool]:
    """For each (source, task): whether the source's function (the task's name in either
    convention, else its first) returns each case's value, or raises its exception."""
    if not items:
        return []
    server = _SERVER % {"per": per_reply_s, "mem": MEMORY_BYTES, "cap": RESULT_BYTES}
    lines = [json.dumps({"source": src, "names": list(task.names), "cases": [list(a) for a, _ in task.cases]})
             for src, task in items]
    proc = subprocess.run([sys.executable, "-I", "-c", server], input="\n".join(lines) + "\n", text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          timeout=(per_reply_s + 1) * len(items) + 30)
    if proc.returncode != 0:
        raise RuntimeError(f"the correctness server failed (exit {proc.returncode})")
    raws = [json.loads(line) for line in proc.stdout.splitlines()]
    if len(raws) != len(items):
        raise RuntimeError(f"the correctness server answered {len(raws)} of {len(items)} replies")
    return [verdict(task, raw) for (_, task), raw in zip(items, raws)]
