"""The README's main command as Snakemake runs it, against the floor its work allows; and the
levers behind its speed, each measured before and after in one run.

    .venv/bin/python benchmarks/main_job.py [--cores 2] [--lever-only] [--rounds 3]

First the lever: one state-tuning step (loss and its state gradient, as urd.replay.tune takes it)
on the `learned` checkpoint, at ctx 2,048 over a T1 transcript and its continuation, with its
head's fixed rows in closed form (`urd.backbone.rwkv7_torch.constant_rows`: what a tuning job
runs) and with the full 65,536-row softmax (what it ran before), interleaved `--rounds` times;
prints each one's seconds, their ratio, and how far the loss and the gradient part.

Then (unless `--lever-only`) the main command from nothing in a fresh copy of the workflow
(data, checkpoint, verification included; the install apart), and from Snakemake's own records of
that run (run_record): its wall time, the floor = max(critical path, the jobs' work / cores),
wall / floor (the target: at most 1.3), the tuning jobs' share of the work, and the largest jobs.
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
from run_record import floor, read_run

from urd.workflow.files import copy_workflow

REPO = Path(__file__).resolve().parents[1]


def main_targets() -> list[str]:
    """The targets of the README's first set-up command (after its install)."""
    text = (REPO / "README.md").read_text()
    m = re.search(r"\.venv/bin/snakemake ((?:results/\S+ )+)--cores", text)
    if not m:
        raise SystemExit("README.md: no `.venv/bin/snakemake <targets> --cores` command found")
    return m[1].split()


def lever(rounds: int) -> None:
    import torch

    from urd.backbone.rwkv7_torch import RWKV7
    from urd.backbone.tokenizer import encode
    from urd.core.config import load_config
    from urd.data import calibrate

    torch.set_num_threads(1)  # a tuning job's (replay.threads)
    torch.set_flush_denormal(True)
    cfg = load_config(REPO / "config/config.yaml")
    path = REPO / "models" / cfg["backbones"]["learned"]["file"]
    if not path.exists():
        subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", str(path.relative_to(REPO))],
                       cwd=REPO, check=True, capture_output=True)
    m = RWKV7.load(path, wkv="chunked", checkpoint_layers=True)
    rows = m.rows
    text = calibrate.t1_episode(cfg, 0)["transcript"]
    toks = torch.tensor((encode(text) * 4)[:2048])
    ts0 = 0.1 * torch.randn(m.time_state_shape, generator=torch.Generator().manual_seed(0))
    times = {"rows": [], "full": []}
    out = {}
    for _ in range(rounds):
        for name, r in (("rows", rows), ("full", None)):
            m.rows = r
            ts = ts0.clone().requires_grad_()
            t = time.perf_counter()
            loss = m.loss(toks, ts)
            loss.backward()
            times[name].append(time.perf_counter() - t)
            out[name] = (loss.item(), ts.grad)
    best = {k: min(v) for k, v in times.items()}
    grad_gap = float((out["rows"][1] - out["full"][1]).abs().max() / out["full"][1].abs().max())
    print(f"lever, the head's fixed rows in closed form: one tuning step at ctx 2,048 on learned "
          f"({rows.live:,} live rows of {m.vocab_size:,}), one thread, best of {rounds}:")
    print(f"  full softmax {best['full']:.2f} s, live rows {best['rows']:.2f} s: {best['full'] / best['rows']:.1f}x; "
          f"loss {out['full'][0]:.6f} against {out['rows'][0]:.6f}, gradient apart by {grad_gap:.1e} of its largest")


def run_main(cores: int) -> None:
    targets = main_targets()
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_workflow(REPO, Path(tmp) / "main")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(cores), *targets], cwd=wd,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode:
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
            raise SystemExit(f"snakemake {' '.join(targets)} failed (exit {proc.returncode})")
        jobs = read_run(wd)
    f = floor(jobs, cores)
    tuning = [j for j in jobs if j.rule == "tune_state"]
    print(f"the main command ({' '.join(targets)}), --cores {cores}: {len(jobs)} jobs, wall {wall:.1f} s "
          f"({wall / 60:.1f} min; target <= 4 min)")
    print(f"  critical path {f['critical_path']:.1f} s; the jobs' work {f['work']:.1f} s / {cores} cores = "
          f"{f['work_over_cores']:.1f} s; floor {f['floor']:.1f} s; wall / floor = {wall / f['floor']:.2f} "
          "(target <= 1.3)")
    print(f"  tuning jobs: {len(tuning)}, {sum(j.wall for j in tuning):.1f} s of the work")
    print("  largest jobs: " + "; ".join(f"{j.name} {j.wall:.1f} s" for j in sorted(jobs, key=lambda j: -j.wall)[:5]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lever-only", action="store_true", help="the lever's figures alone, not the main command")
    a = ap.parse_args(argv)
    lever(a.rounds)
    if not a.lever_only:
        run_main(a.cores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
