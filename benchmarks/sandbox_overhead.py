"""What the job sandbox costs: the README's main job with and without it, in the same run.

    .venv/bin/python benchmarks/sandbox_overhead.py [--target results/urd/tiny/summary.json] [--cores 2]

Builds the target twice from nothing, in two fresh copies of the workflow (data, checkpoint,
prefill, control, every cell, the summary): once with `sandbox: off`, once with `sandbox: required`,
alternating which goes first over --rounds rounds. Prints each wall time, the jobs run, the
overhead (required / off - 1) and the mean cost per job. The summaries' figures must be equal
(only the sandbox labels differ): the sandbox changes where a job may look, not what it computes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from urd.workflow.files import copy_workflow

REPO = Path(__file__).resolve().parents[1]


def build(mode: str, target: str, cores: int) -> tuple[float, int, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        wf = copy_workflow(REPO, Path(tmp) / "wf")
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "snakemake", target, "--cores", str(cores), "--nolock",
                               "--config", f"sandbox={mode}"], cwd=wf, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"sandbox={mode}: snakemake failed\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        jobs = int(re.findall(r"(\d+) of \d+ steps \(100%\) done", proc.stdout + proc.stderr)[-1])
        summary = json.loads((wf / target).read_text())
        return wall, jobs, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="results/urd/tiny/summary.json")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    walls: dict[str, list[float]] = {"off": [], "required": []}
    figures = {}
    for r in range(args.rounds):
        for mode in (("off", "required") if r % 2 == 0 else ("required", "off")):
            wall, jobs, summary = build(mode, args.target, args.cores)
            walls[mode].append(wall)
            figures[mode] = {k: summary[k] for k in ("control", "cells")}
            print(f"round {r + 1}, sandbox={mode}: {wall:.1f} s, {jobs} jobs, sandbox label "
                  f"{summary['provenance']['sandbox']}", flush=True)
    same = _unlabelled(figures["off"]) == _unlabelled(figures["required"])
    off, req = sum(walls["off"]) / len(walls["off"]), sum(walls["required"]) / len(walls["required"])
    print(f"{args.target}: off {off:.1f} s, required {req:.1f} s, overhead {100 * (req / off - 1):+.1f} % "
          f"({(req - off) / jobs:+.2f} s a job over {jobs} jobs); figures {'equal' if same else 'DIFFERENT'}")
    return 0 if same else 1


def _unlabelled(figures: dict) -> dict:
    """The figures without the sandbox labels (which say how the jobs ran, nothing else)."""
    if isinstance(figures, dict):
        return {k: _unlabelled(v) for k, v in figures.items() if k != "sandbox"}
    if isinstance(figures, list):
        return [_unlabelled(v) for v in figures]
    return figures


if __name__ == "__main__":
    sys.exit(main())
