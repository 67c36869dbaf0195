"""Fetch a released checkpoint at its pinned revision (the job behind the fetch_backbone rule).

    python -m urd.backbone.fetch_pinned --repo BlinkDL/rwkv7-g1 --revision <commit> \
        --base-url https://huggingface.co --file F.pth --sha256 <hex> [--size N] \
        [--mirror URL ...] --dest models/F.pth
"""

from __future__ import annotations

import argparse
import sys

from ..errors import UrdError
from ..fetch import fetch_checkpoint, hf_resolve_url


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.backbone.fetch_pinned")
    for name in ("--repo", "--revision", "--base-url", "--file", "--sha256", "--dest"):
        ap.add_argument(name, required=True)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--mirror", action="append", default=[])
    args = ap.parse_args(argv)
    try:
        if args.sha256 == "unpinned":
            raise UrdError(f"calibration/backbones.sha256: no line pins models/{args.file}")
        if args.revision in ("", "None", "null"):
            raise UrdError(
                f"config backbones: source.revision for {args.file}: expected the 40-hex commit of "
                f"{args.repo} that holds this file; none is pinned (a branch such as main moves, "
                "and upstream deletes old checkpoints from it)"
            )
        url = hf_resolve_url(args.repo, args.revision, args.file, args.base_url)
        fetch_checkpoint(url, args.dest, sha256=args.sha256, size=args.size, mirrors=args.mirror)
    except UrdError as exc:
        print(f"urd fetch FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
