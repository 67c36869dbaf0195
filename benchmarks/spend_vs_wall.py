"""The planned spend of `snakemake -n` against what the run then took, on this machine.

    .venv/bin/python benchmarks/spend_vs_wall.py [--target results/urd/tiny/summary.json] [--cores 2]

Copies the workflow into a temporary folder, reads the spend line of a dry run, runs the target
with --cores N, and prints the planned device-hours (GPU + CPU) against the measured wall time
x cores, and their ratio. On a CPU-only machine the "GPU" jobs run on the CPU too, so both
count against the cores.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from urd.workflow.files import copy_workflow

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="results/urd/tiny/summary.json")
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_workflow(REPO, Path(tmp) / "wf")
        smk = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), args.target]
        dry = subprocess.run([*smk, "-n"], cwd=wd, capture_output=True, text=True, check=True)
        line = dry.stdout.strip().splitlines()[-1]
        m = re.search(r"GPU (\d+\.\d+) h, CPU (\d+\.\d+) h", line)
        if not m:
            print(f"no spend line in the dry run: {line}", file=sys.stderr)
            return 1
        planned = (float(m[1]) + float(m[2])) * 3600
        t0 = time.perf_counter()
        subprocess.run(smk, cwd=wd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
    used = wall * args.cores
    print(line)
    print(f"planned {planned:.0f} device-seconds; measured {wall:.0f} s wall x {args.cores} cores = "
          f"{used:.0f} core-seconds; planned / measured = {planned / used:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
