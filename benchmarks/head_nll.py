"""The state-tuning loss's head, with and without the subnormal skip, one thread.

    .venv/bin/python benchmarks/head_nll.py [--ctx 2048] [--rounds 3]

A tuning step's loss over the 65,536-row head (`urd.backbone.rwkv7_torch._HeadNLL`, its
gradient formed in the forward pass) forms every softmax entry with an exp. A log-probability
under log(FLT_MIN) has a subnormal exp, which the tuning job's flush-denormal makes 0 and the
CPU computes far slower; the head sends those to -inf first. Times the head's forward both ways
(`plain`: the exp of every entry, as before), interleaved `--rounds` times, on two heads: the
`learned` checkpoint's form (2,224 trained rows, the other 63,312 at -100 through the pinned
channel: most of every row subnormal) and a random 768-wide head (the 0.1B's width, logits of a
few units: nothing subnormal, the skip costs its comparison). Prints tokens a second and the
ratio, and checks both ways give the same bytes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from urd.backbone import rwkv7_torch as R  # noqa: E402


def plain(h: torch.Tensor, head: torch.Tensor, targets: torch.Tensor, chunk: int = 512):
    """The head's forward before the skip: the exp of every log-probability."""
    total, grad = h.new_zeros(()), torch.empty_like(h)
    for s in range(0, h.shape[0], chunk):
        tc = targets[s: s + chunk]
        keep = tc != -100
        tk = tc.clamp(min=0).unsqueeze(1)
        logp = torch.log_softmax(F.linear(h[s: s + chunk], head), dim=1)
        total = total - (logp.gather(1, tk).squeeze(1) * keep).sum()
        p = logp.exp_()
        p.scatter_add_(1, tk, -keep.to(p.dtype).unsqueeze(1))
        p.mul_(keep.to(p.dtype).unsqueeze(1))
        grad[s: s + chunk] = F.linear(p, head.t())
    return total, grad


def heads(ctx: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    # the learned checkpoint's form: the last channel a constant 1, its head column the bias
    h = torch.randn(ctx, 128, generator=g)
    h[:, -1] = 1.0
    learned = torch.randn(65536, 128, generator=g) * 0.3
    learned[2224:] = 0.0
    learned[2224:, -1] = -100.0
    wide = torch.randn(65536, 768, generator=g) * 0.05
    return {"learned (2 x 128, untrained rows at -100)": (h, learned),
            "random 768-wide": (torch.randn(ctx, 768, generator=g), wide)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)  # as the tuning job runs
    targets = torch.randint(0, 2224, (a.ctx,), generator=torch.Generator().manual_seed(1))
    for name, (h, head) in heads(a.ctx).items():
        h = h.requires_grad_()
        speed = {"plain": [], "skip": []}
        for _ in range(a.rounds):
            for way in speed:
                started = time.perf_counter()
                if way == "plain":
                    loss, grad = plain(h.detach(), head, targets)
                else:
                    h.grad = None
                    loss2 = R._HeadNLL.apply(h, head, targets, 512)
                    loss2.backward()
                speed[way].append(a.ctx / (time.perf_counter() - started))
        same = torch.equal(loss, loss2.detach()) and torch.equal(grad, h.grad)
        print(f"{name}, ctx {a.ctx}: plain " + ", ".join(f"{x:,.0f}" for x in speed["plain"])
              + "; skip " + ", ".join(f"{x:,.0f}" for x in speed["skip"])
              + f" tokens/s; ratio skip / plain (best of each) {max(speed['skip']) / max(speed['plain']):.2f}; "
              + f"same bytes: {same}")


if __name__ == "__main__":
    main()
