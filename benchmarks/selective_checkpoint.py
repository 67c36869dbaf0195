"""What bf16's selective checkpointing costs a state-tuning step, against recomputing everything.

    .venv/bin/python benchmarks/selective_checkpoint.py [--shape 0.1b] [--ctx 32] [--rounds 3]

Under bf16, `checkpoint_layers` keeps each block's bf16 products through torch's selective
checkpointing (`urd.backbone.rwkv7_torch._keep_products`), whose policy runs in Python for every
operation the block dispatches. At a short step the kernels are small, as most are on a GPU, so
the policy's own cost shows. One step (forward and backward, random weights, one thread) per
variant, round-robin over --rounds rounds, the best of each kept; the policy's calls a step are
counted. Prints seconds a step per variant and the policy's cost a call.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import torch

from urd.backbone import rwkv7_torch as R
from urd.backbone.bench import SHAPES, _tokens
from urd.backbone.tiny import random_state_dict

VARIANTS = {  # name: (precision, checkpoint_layers, the policy: selective or recompute everything)
    "fp32, recompute all": ("fp32", True, False),
    "bf16, selective (the default)": ("bf16", True, True),
    "bf16, recompute all": ("bf16", True, False),
    "bf16, no recomputation": ("bf16", False, False),
    "fp32, no recomputation": ("fp32", False, False),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="0.1b", choices=sorted(SHAPES))
    ap.add_argument("--ctx", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)  # as the tuning job runs
    sd = random_state_dict(0, **SHAPES[a.shape])
    toks = torch.tensor(_tokens(a.ctx))
    calls = [0]

    def counting(ctx, op, *args, **kwargs):
        calls[0] += 1
        return R._keep_products(ctx, op, *args, **kwargs)

    best, per_step = dict.fromkeys(VARIANTS, float("inf")), {}
    original = R._SELECTIVE
    try:
        for _ in range(a.rounds):
            for name, (precision, ckpt, selective) in VARIANTS.items():
                R._SELECTIVE = partial(R.create_selective_checkpoint_contexts, counting) if selective else R.noop_context_fn
                m = R.RWKV7(sd, "cpu", wkv="chunked", wkv_chunk=32, precision=precision, checkpoint_layers=ckpt)
                for timed in (False, True):  # a warm-up step, then the timed one
                    calls[0] = 0
                    ts = m.zero_time_state(requires_grad=True)
                    t = time.perf_counter()
                    m.loss(toks, ts).backward()
                    if timed:
                        best[name] = min(best[name], time.perf_counter() - t)
                per_step[name] = calls[0]
    finally:
        R._SELECTIVE = original
    print(f"{a.shape} shape, ctx {a.ctx}, one thread, best of {a.rounds} rounds:")
    for name, s in best.items():
        print(f"  {name}: {s:.3f} s a step" + (f", {per_step[name]:,} policy calls" if per_step[name] else ""))
    sel, plain = best["bf16, selective (the default)"], best["bf16, recompute all"]
    n = per_step["bf16, selective (the default)"]
    print(f"selective over recompute-all: {sel - plain:+.3f} s a step, {1e6 * (sel - plain) / n:.0f} us a policy call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
