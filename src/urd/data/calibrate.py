"""Regenerate every urd rung-1 episode byte-for-byte, and (for maintainers) re-pin the manifest.

    python -m urd.data.calibrate                 # writes data/<profile>/t1.jsonl and data/t2.jsonl
                                            # (and each one's session_a and session_b views)
    python -m urd.data.calibrate --check         # and verifies them against calibration/manifest.sha256
    python -m urd.data.calibrate --write-manifest  # re-pin (only when the protocol deliberately changes)

The Snakemake rule `calibrate` calls the same functions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.config import load_config
from ..core.errors import UrdError
from ..core.io import atomic_write_text, jsonl_text
from ..core.manifest import pin_or_check
from . import t1, t2, views

MANIFEST = Path("calibration/manifest.sha256")


def t1_path(config: dict) -> Path:
    return Path("data") / config["profile"] / "t1.jsonl"


def t2_path(config: dict) -> Path:
    return Path("data") / "t2.jsonl"


def t1_episode(config: dict, index: int) -> dict:
    return t1.generate_episode(config["master_seed"], index, config["tasks"]["t1"], config["queries"])


def t2_episode(config: dict, index: int) -> dict:
    return t2.generate_episode(config["master_seed"], index, config["tasks"]["t2"])


def episodes_text(config: dict, task: str) -> str:
    make = {"t1": t1_episode, "t2": t2_episode}[task]
    return jsonl_text(make(config, i) for i in range(config["episodes"]))


def write_data(config: dict, task: str, out: str | Path) -> list[Path]:
    """The full episodes at `out`, and beside it what each side of the boundary may read."""
    text = episodes_text(config, task)
    episodes = [json.loads(line) for line in text.splitlines()]
    atomic_write_text(out, text)
    written = [Path(out)]
    for side, view in views.VIEWS.items():
        atomic_write_text(views.view_path(out, side), jsonl_text(view(ep) for ep in episodes))
        written.append(views.view_path(out, side))
    return written


def data_spec(config: dict) -> dict:
    """The part of the config the data depends on: a change elsewhere must not regenerate it."""
    return {k: config[k] for k in ("master_seed", "episodes", "queries", "profile", "tasks")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.data.calibrate", description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--config", default="config/config.yaml", help="YAML config (validated)")
    src.add_argument("--spec", help="data spec as JSON, as the Snakemake rule passes it")
    ap.add_argument("--t1", help="output path (default data/<profile>/t1.jsonl)")
    ap.add_argument("--t2", help="output path (default data/t2.jsonl)")
    ap.add_argument("--check", action="store_true", help="verify the data against the manifest")
    ap.add_argument("--write-manifest", action="store_true", help="re-pin the manifest to this data")
    args = ap.parse_args(argv)
    try:
        config = json.loads(args.spec) if args.spec else load_config(args.config)
        files = [
            *write_data(config, "t1", args.t1 or t1_path(config)),
            *write_data(config, "t2", args.t2 or t2_path(config)),
        ]
        for f in files:
            print(f"wrote {f}", file=sys.stderr)
        pin_or_check(MANIFEST, files, pin=args.write_manifest, check=args.check)
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
