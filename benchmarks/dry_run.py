"""How long `snakemake -n <target>` takes on a tree where everything is built (a no-op).

    .venv/bin/python benchmarks/dry_run.py [--workdir DIR] [--target published] [--repeats 5]

Builds nothing: run it where the target is already up to date (after `snakemake published`).
Prints each wall time, the median, and the DAG-time import cost of the workflow layer.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--target", default="published")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "snakemake", "-n", args.target, "--cores", "2"]
    walls = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        proc = subprocess.run(cmd, cwd=args.workdir, capture_output=True, text=True)
        walls.append(time.perf_counter() - t)
        if proc.returncode != 0:
            print(proc.stdout + proc.stderr, file=sys.stderr)
            return 1
        if "Nothing to be done" not in proc.stdout + proc.stderr:
            print(f"not a no-op: {args.target} has jobs to run in {args.workdir}", file=sys.stderr)
            print((proc.stdout + proc.stderr)[-2000:], file=sys.stderr)
            return 1
    probe = "import time; t = time.perf_counter(); import urd.workflow; print(time.perf_counter() - t)"
    imports = float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    print(f"snakemake -n {args.target} (nothing to do): " + ", ".join(f"{w:.2f}" for w in walls) + " s")
    print(f"median {statistics.median(walls):.2f} s; importing urd.workflow: {imports:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
