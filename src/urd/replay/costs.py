"""Fold a scale's tuning artifacts into one table of what consolidation cost.

    python -m urd.replay.costs --scale tiny --out results/urd/tiny/replay_costs.json \
        artifacts/replay/tiny/*/*/costs.json

Per recipe: artifacts, steps, trained tokens, their ratio to the contract's cap, wall and CPU
time, devices, precisions, and the out_of_contract label; then one row per artifact. Timings are whatever
the machine gave (not deterministic); everything else is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.errors import UrdError
from ..core.io import atomic_write_json
from .artifact import read_artifact

ROW_KEYS = ("task", "episode", "transcript_sha256", "transcript_tokens", "steps", "ctx",
            "trained_tokens", "token_cap", "cap_ratio", "out_of_contract", "device", "torch_threads", "wkv", "precision",
            "wall_time_s", "seconds_per_step", "cpu_time_s", "peak_rss_mb", "artifact_sha256")


def _mean(values) -> float | None:
    v = [x for x in values if x is not None]
    return round(sum(v) / len(v), 4) if v else None


def fold_costs(costs_files: list[str | Path]) -> dict:
    rows: dict[str, list[dict]] = {}
    for path in sorted(map(Path, costs_files)):
        art = read_artifact(path.parent, transcript_sha256=path.parent.name)
        c = art.costs
        losses = c.get("losses") or [None]
        rows.setdefault(c["recipe"]["name"], []).append({**{k: c.get(k) for k in ROW_KEYS},
                                                         "loss_first": losses[0], "loss_last": losses[-1]})
    recipes = {}
    for name, rs in sorted(rows.items()):
        rs.sort(key=lambda r: (r["task"], r["episode"]))
        tokens = sum(r["trained_tokens"] for r in rs)
        tune_steps = sum(r["steps"] for r in rs)
        recipes[name] = {
            "out_of_contract": any(r["out_of_contract"] for r in rs),
            "artifacts": len(rs),
            "steps": tune_steps,
            "trained_tokens": tokens,
            "cap_ratio_max": max(r["cap_ratio"] for r in rs),
            "wall_time_s": round(sum(r["wall_time_s"] for r in rs), 3),
            "seconds_per_step_mean": round(sum(r["seconds_per_step"] * r["steps"] for r in rs) / tune_steps, 3),
            "devices": sorted({r["device"] for r in rs}),
            # a mean over mixed precisions is said so (artifacts older than the field: "None")
            "precisions": sorted({str(r["precision"]) for r in rs}),
            # the tuning loss (nats a token) at the first and the last step, mean over artifacts:
            # whether tuning moved anything (urd.tables.writeup marks a cell where it did not)
            "loss_first_mean": _mean(r["loss_first"] for r in rs),
            "loss_last_mean": _mean(r["loss_last"] for r in rs),
            "rows": rs,
        }
    return {"recipes": recipes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.replay.costs")
    ap.add_argument("--scale", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("costs", nargs="+", help="costs.json files of the scale's artifacts")
    args = ap.parse_args(argv)
    try:
        table = {"scale": args.scale, **fold_costs(args.costs)}
    except UrdError as exc:
        print(f"urd replay costs FAILED: {exc}", file=sys.stderr)
        return 1
    atomic_write_json(args.out, table)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
