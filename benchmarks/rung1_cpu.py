"""The urd rung-1 table workload on a random-weight model of the real 0.1B shape, on the CPU.

    .venv/bin/python benchmarks/rung1_cpu.py [--episodes 6] [--shape 0.1b|tiny] [--systems ...]

Runs what `results/urd/0.1b/summary.json` runs (control and the five baselines, both tasks, both
splits) with fixed decode lengths (no stop string, so every answer decodes exactly
max_new_tokens), and prints tokens prefilled and decoded and wall time per phase and in all.
A random model answers nonsense, so only the figures of work are meaningful, not the scores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from urd import calibrate
from urd.backbone.adapter import Backbone
from urd.backbone.tiny import write_tiny_checkpoint
from urd.config import load_config
from urd.harness.context import Decode
from urd.harness.runner import run_control, run_system
from urd.systems import registry

SHAPES = {"0.1b": dict(n_layer=12, n_embd=768), "tiny": dict(n_layer=2, n_embd=128)}
# The replay baselines read tuning artifacts made by separate jobs; their cost is the tuning
# benchmark's (python -m urd.backbone.bench), not this one's.
BASELINES = ("vanilla", "gzip_tail", "retrieval", "summary", "state_carry")


class Ledger:
    """Tokens and seconds per phase, read off the backbone's meter and a wrapped generate()."""

    def __init__(self, backbone):
        self.bb = backbone
        self.rows = defaultdict(lambda: {"prefilled": 0, "decoded": 0, "seconds": 0.0})
        self.decoded = 0
        generate = backbone.generate

        def counting_generate(*args, **kwargs):
            gen = generate(*args, **kwargs)
            self.decoded += len(gen.tokens)
            return gen

        backbone.generate = counting_generate

    def measure(self, phase, fn, *args):
        t0, tok0, dec0 = time.perf_counter(), self.bb.tokens_processed, self.decoded
        out = fn(*args)
        row = self.rows[phase]
        decoded = self.decoded - dec0
        row["decoded"] += decoded
        # tokens through the forward that were not decoded outputs were prefilled
        row["prefilled"] += self.bb.tokens_processed - tok0 - decoded
        row["seconds"] += time.perf_counter() - t0
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="0.1b")
    ap.add_argument("--systems", default=",".join(BASELINES))
    ap.add_argument("--decode", type=int, default=12, help="tokens decoded per answer")
    args = ap.parse_args(argv)

    config = load_config()
    budgets = config["profiles"][config["profile"]]["budgets"]
    decode = Decode(max_new_tokens=args.decode, stop=())
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = write_tiny_checkpoint(Path(tmp) / "random.pth", seed=1, **SHAPES[args.shape])
        t0 = time.perf_counter()
        bb = Backbone.load(ckpt)
        load_s = time.perf_counter() - t0
    ledger = Ledger(bb)
    for task in ("t1", "t2"):
        make = calibrate.t1_episode if task == "t1" else calibrate.t2_episode
        episodes = [make(config, i) for i in range(args.episodes)]
        ledger.measure(f"control {task}", run_control, bb, task, episodes, decode)
        for name in args.systems.split(","):
            for split, budget in sorted(budgets.items()):
                system = registry.build(name, bb, settings={"max_new_tokens": 64})
                consolidate = system.consolidate
                system.consolidate = lambda t, b, c=consolidate, n=name, s=split, k=task: ledger.measure(
                    f"{n} {k} {s} consolidate", c, t, b)
                answer = system.answer
                system.answer = lambda f, q, h, a=answer, n=name, s=split, k=task: ledger.measure(
                    f"{n} {k} {s} answer", a, f, q, h)
                run_system(bb, system, task, episodes, split, budget, config["consolidation_factor"], decode)
    total = time.perf_counter() - t_start

    print(f"\nurd rung-1 workload, random weights, {args.shape} shape {SHAPES[args.shape]}, "
          f"{args.episodes} episode(s), {args.decode} decoded tokens per answer, CPU fp32")
    print(f"model load: {load_s:.1f} s")
    print(f"{'phase':40s} {'prefilled':>10s} {'decoded':>8s} {'seconds':>9s}")
    sums = {"prefilled": 0, "decoded": 0, "seconds": 0.0}
    for phase, row in ledger.rows.items():
        print(f"{phase:40s} {row['prefilled']:10d} {row['decoded']:8d} {row['seconds']:9.1f}")
        for k in sums:
            sums[k] += row[k]
    print(f"{'all phases':40s} {sums['prefilled']:10d} {sums['decoded']:8d} {sums['seconds']:9.1f}")
    print(f"wall time in all (incl. checkpoint write and load): {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
