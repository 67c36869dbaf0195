"""Generate the `tiny` backbone: python -m urd.backbone.make_tiny --seed S --n-layer L --n-embd D --out models/x.pth

A random-weight RWKV-7 with the World vocabulary, byte-identical for the same arguments, pinned
by SHA-256 in calibration/backbones.sha256 like the released checkpoints.
"""

from __future__ import annotations

import argparse
import sys

from .tiny import write_tiny_checkpoint


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.backbone.make_tiny")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-layer", type=int, required=True)
    ap.add_argument("--n-embd", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    write_tiny_checkpoint(args.out, seed=args.seed, n_layer=args.n_layer, n_embd=args.n_embd)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
