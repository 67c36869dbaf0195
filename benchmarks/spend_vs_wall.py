"""The planned spend of `snakemake -n` against what the run then took, on this machine.

    .venv/bin/python benchmarks/spend_vs_wall.py [--target results/urd2/tiny/pareto/summary.json]
        [--cores 2] [--shape 0.1b] [--published] [--jobs sweep_answer]

Copies the workflow into a temporary folder, reads the spend line of a dry run, runs the target
with --cores N, and prints, from Snakemake's own records of the run (run_record): each rule's
planned CPU seconds (the `cpu_seconds` resource the spend line prices) against its measured work
(its jobs' wall times: run_record says why), the same for the summary system's notes (the sweep's and chains'
consolidation by `summary`, the decode that dominates rung 2) and for the whole run, and the
planned device-seconds against the measured wall time x cores. The target: planned within 25 %
of measured. On a CPU-only machine the "GPU" jobs run on the CPU too, so both count against the
cores.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from run_record import read_run
from urd2_sweep import SHAPES, workflow_copy


def _row(label: str, planned: float, measured: float) -> str:
    ratio = f"{planned / measured:6.2f}" if measured else "   n/a"
    return f"{label:44s} {planned:9.1f} {measured:9.1f} {ratio}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="results/urd2/tiny/pareto/summary.json")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--shape", choices=sorted(SHAPES), help="give tiny this shape (random weights)")
    ap.add_argument("--published", action="store_true", help="rung 2's published sizes, not tiny's reduced ones")
    ap.add_argument("--jobs", nargs="*", default=[], metavar="RULE", help="also print each job of these rules")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wd = workflow_copy(Path(tmp) / "wf", args.shape, args.published)
        smk = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), args.target]
        dry = subprocess.run([*smk, "-n"], cwd=wd, capture_output=True, text=True, check=True)
        line = next((ln for ln in dry.stdout.splitlines() if ln.startswith("urd planned spend")), "")
        m = re.search(r"GPU (\d+\.\d+) h, CPU (\d+\.\d+) h", line)
        if not m:
            print(f"no spend line in the dry run: {dry.stdout[-400:]}", file=sys.stderr)
            return 1
        planned = (float(m[1]) + float(m[2])) * 3600
        t0 = time.perf_counter()
        subprocess.run(smk, cwd=wd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
        jobs = read_run(wd)
    priced = [j for j in jobs if j.planned_cpu is not None]
    print(line)
    print(f"\n{'jobs the spend line prices (cpu_seconds)':44s} {'planned s':>9s} {'measured':>9s} {'ratio':>6s}")
    for rule in sorted({j.rule for j in priced}):
        mine = [j for j in priced if j.rule == rule]
        print(_row(f"{rule} ({len(mine)})", sum(j.planned_cpu for j in mine), sum(j.wall for j in mine)))
    for rule in args.jobs:
        for j in sorted((j for j in priced if j.rule == rule), key=lambda j: j.wildcards):
            print(_row(f"  {j.wildcards}"[:44], j.planned_cpu, j.wall))
    notes = [j for j in priced if j.rule in ("sweep_consolidate", "chain_consolidate") and "system=summary" in j.wildcards]
    if notes:
        print(_row(f"summary's notes ({len(notes)} consolidations)", sum(j.planned_cpu for j in notes),
                   sum(j.wall for j in notes)))
    print(_row(f"all priced jobs ({len(priced)})", sum(j.planned_cpu for j in priced), sum(j.wall for j in priced)))
    unpriced = [j for j in jobs if j.planned_cpu is None]
    print(f"{len(unpriced)} jobs are not priced (data, verification, judges, tables): "
          f"{sum(j.wall for j in unpriced):.1f} s of work measured")
    print(_row("the whole run: planned against every job's work", sum(j.planned_cpu for j in priced),
               sum(j.wall for j in jobs)))
    used = wall * args.cores
    print(f"\nplanned {planned:.0f} device-seconds; measured {wall:.0f} s wall x {args.cores} cores = "
          f"{used:.0f} core-seconds; planned / measured = {planned / used:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
