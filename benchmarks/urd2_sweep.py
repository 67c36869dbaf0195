"""Rung 2's sweep and chains as Snakemake runs them, against the floor their work allows.

    .venv/bin/python benchmarks/urd2_sweep.py [--scale tiny|learned] [--shape 0.1b] [--cores 2]
        [--targets pareto,chains] [--rung1]

Copies the workflow into a temporary folder and runs rung 2's targets at the scale (`pareto`:
results/urd2/<scale>/pareto/summary.json; `chains`: .../chains/summary.json) in one Snakemake
run with --cores N, from nothing (data, checkpoint, verification included). `--shape 0.1b` gives
`tiny` the 0.1B shape (12 layers x 768, random weights that never emit their end token, so every
summary note runs to its budget's token cap); `--published` runs rung 2's published sizes (7
budgets, 6 episodes, every chain) where tiny's entry reduces them. Prints, from Snakemake's own records of that run
(run_record):

- the wall time of the run;
- the floor = max(critical path, the jobs' work / cores): the critical path is the longest chain
  of dependent jobs' measured wall times, so it holds the longest note's decode; a job's work is
  its wall time (run_record says why);
- wall / floor (the target: at most 1.3), the three largest jobs on the critical path, and the
  largest jobs of the run.

`--rung1` also runs rung 1's table (results/urd/<scale>/summary.json) in a copy of its own and
prints the floor against its wall time, as information.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from run_record import floor, read_run

from urd.core.io import sha256_file
from urd.workflow.files import copy_workflow

REPO = Path(__file__).resolve().parents[1]
SHAPES = {"0.1b": (12, 768)}
_t0 = [0.0]  # the epoch time the last run started: Snakemake's metadata times are epoch times
TARGET = {"pareto": "results/urd2/{scale}/pareto/summary.json", "chains": "results/urd2/{scale}/chains/summary.json"}


def workflow_copy(dest: Path, shape: str | None, published: bool = False) -> Path:
    """A fresh copy of the workflow; with `shape`, tiny is that shape (random weights) and is
    priced and sized by that shape's measured entries (cpu_speed, cpu_memory), so the dry run's
    spend is the spend of what runs; with `published`, tiny runs rung 2's published sizes (its
    reduced `urd2.scales.tiny` entry is dropped)."""
    wd = copy_workflow(REPO, dest)
    if published:
        cfg = wd / "config/config.yaml"
        text, n = re.subn(r"^    tiny: .*\n(?=      chains: )(?:      .*\n)+", "", cfg.read_text(), count=1, flags=re.M)
        if n != 1:
            raise SystemExit(f"{cfg}: expected an urd2.scales.tiny entry to drop")
        cfg.write_text(text)
    if shape:
        cfg = wd / "config/config.yaml"
        text, n = re.subn(r"(generate: \{seed: \d+, )n_layer: \d+, n_embd: \d+\}",
                          r"\1n_layer: {}, n_embd: {}}}".format(*SHAPES[shape]), cfg.read_text())
        for key in ("cpu_speed", "cpu_memory"):
            # an entry is a flow mapping that may run on over deeper-indented lines: copy all of it
            entry = re.search(rf"^{key}:\n(?:  .*\n)*?  {re.escape(shape)}: (.*\n(?:   +.*\n)*)", text, re.M)
            text, m = re.subn(rf"^({key}:\n(?:  .*\n)*?)  tiny: .*\n(?:   +.*\n)*",
                              lambda g, e=entry: f"{g[1]}  tiny: {e[1]}", text, count=1, flags=re.M) if entry else (text, 0)
            n += m
        if n != 3:
            raise SystemExit(f"{cfg}: expected tiny's `generate:` line and its cpu_speed and cpu_memory entries")
        loaded = yaml.safe_load(text)
        for key in ("cpu_speed", "cpu_memory"):
            if loaded[key]["tiny"] != loaded[key][shape]:
                raise SystemExit(f"{cfg}: {key}.tiny is not {key}.{shape} after the copy: {loaded[key]['tiny']}")
        cfg.write_text(text)
        # the reshaped checkpoint is made before the timed run and pinned in the copy's manifest
        # (its digest is not the shipped tiny's), so the run verifies it as it verifies any
        model = "models/" + re.search(r"^  tiny:.*\n    file: (\S+)", text, re.M)[1]
        subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", model], cwd=wd, check=True,
                       capture_output=True)
        pins = wd / "calibration/backbones.sha256"
        pinned = re.sub(rf"^[0-9a-f]{{64}}  {re.escape(model)}$", f"{sha256_file(wd / model)}  {model}",
                        pins.read_text(), flags=re.M)
        if pinned == pins.read_text():
            raise SystemExit(f"{pins}: no pin for {model} to replace")
        pins.write_text(pinned)
    return wd


def run(wd: Path, targets: list[str], cores: int) -> float:
    """The run's wall seconds."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), *targets]
    t0, _t0[0] = time.perf_counter(), time.time()
    proc = subprocess.run(cmd, cwd=wd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"snakemake {' '.join(targets)} failed (exit {proc.returncode})")
    return wall


def report(label: str, wall: float, jobs, cores: int) -> dict:
    f = floor(jobs, cores)
    print(f"{label}: {len(jobs)} jobs, wall {wall:.1f} s")
    print(f"  critical path {f['critical_path']:.1f} s ({len(f['path'])} jobs); the jobs' work (their walls) "
          f"{f['work']:.1f} s / {cores} cores = {f['work_over_cores']:.1f} s")
    print(f"  floor {f['floor']:.1f} s; wall / floor = {wall / f['floor']:.2f} (target <= 1.3)")
    first = min(j.start for j in jobs)
    print(f"  cores idle between jobs {cores * wall - f['work']:.1f} core-s, {cores * (first - _t0[0]):.1f} of them "
          "before the first job")
    print("  largest on the critical path: " + "; ".join(
        f"{j.name} {j.wall:.1f} s" for j in sorted(f["path"], key=lambda j: -j.wall)[:3]))
    print("  largest of the run: " + "; ".join(
        f"{j.name} {j.wall:.1f} s" for j in sorted(jobs, key=lambda j: -j.wall)[:3]))
    return f


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="tiny")
    ap.add_argument("--shape", choices=sorted(SHAPES), help="give tiny this shape (random weights)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--published", action="store_true", help="rung 2's published sizes, not tiny's reduced ones")
    ap.add_argument("--targets", default="pareto,chains")
    ap.add_argument("--rung1", action="store_true", help="also time rung 1's table, as information")
    args = ap.parse_args(argv)
    if args.shape and args.scale != "tiny":
        ap.error("--shape reshapes tiny's random weights: use it with --scale tiny")
    targets = [TARGET[t].format(scale=args.scale) for t in args.targets.split(",")]
    shape = (args.shape or "its configured") + " shape" + (", published sizes" if args.published else "")
    print(f"urd rung 2 through Snakemake: {', '.join(targets)} at scale {args.scale} ({shape}), "
          f"--cores {args.cores}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        wd = workflow_copy(Path(tmp) / "rung2", args.shape, args.published)
        wall = run(wd, targets, args.cores)
        f = report("rung 2", wall, read_run(wd), args.cores)
        if args.rung1:
            wd1 = workflow_copy(Path(tmp) / "rung1", args.shape, args.published)
            wall1 = run(wd1, [f"results/urd/{args.scale}/summary.json"], args.cores)
            report("rung 1's table", wall1, read_run(wd1), args.cores)
            print(f"rung 2's floor / rung 1's wall = {f['floor'] / wall1:.2f} (information, not a target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
