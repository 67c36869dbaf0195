"""Run one cell of urd rung 1 and write its responses.jsonl (the job behind each Snakemake rule).

    python -m urd.run --checkpoint models/m.pth --task t1 --data data/c1/t1.jsonl \
        --system control --spec '{...}' --out results/urd/tiny/control/t1/responses.jsonl
    python -m urd.run ... --system gzip_tail --split over --budget 120 ...
    python -m urd.run ... --system replay_tune ... --artifacts artifacts/replay/tiny/replay_tune

The spec is the slice of the validated config the cell depends on (decode lengths, contract
factor, episode and query limits, system settings and plug-ins), passed by the rule as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import UrdError
from .harness.context import Decode
from .harness.runner import run_control, run_system
from .io import atomic_write_jsonl, read_jsonl


def cell_spec(config: dict, task: str) -> dict:
    """What a cell depends on, so a change elsewhere in the config does not rerun it."""
    return {
        "consolidation_factor": config["consolidation_factor"],
        "decode": config["decode"][task],
        "evaluate_episodes": config.get("evaluate_episodes"),
        "evaluate_queries": config.get("evaluate_queries"),
        "plugins": config.get("plugins", {}),
        "system_settings": config.get("system_settings", {}),
        "strategy": config["strategy"],
    }


def select(episodes: list[dict], spec: dict) -> list[dict]:
    """The evaluated slice: the first N episodes and the first M queries of each (None = all)."""
    n, m = spec.get("evaluate_episodes"), spec.get("evaluate_queries")
    chosen = episodes[:n] if n else episodes
    return [{**ep, "queries": ep["queries"][:m]} if m else ep for ep in chosen]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.run")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--task", required=True, choices=["t1", "t2"])
    ap.add_argument("--data", required=True)
    ap.add_argument("--system", required=True, help="'control' or a system name")
    ap.add_argument("--split", default=None)
    ap.add_argument("--budget", type=int, default=None)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--artifacts", default=None, help="tuning artifacts of the system's recipe (replay systems)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    spec = json.loads(args.spec)
    try:
        from .systems import registry

        if args.system != "control":
            registry.resolve(args.system, spec.get("plugins"))  # fail before loading a model
        from .backbone.adapter import Backbone

        episodes = select(read_jsonl(args.data), spec)
        backbone = Backbone.load(args.checkpoint, strategy=spec["strategy"])
        decode = Decode(max_new_tokens=spec["decode"]["max_new_tokens"])
        if args.system == "control":
            records = run_control(backbone, args.task, episodes, decode, label=f"control/{args.task}")
        else:
            settings = spec.get("system_settings", {}).get(args.system, {})
            if args.artifacts:
                settings = {**settings, "artifacts": args.artifacts}
            system = registry.build(args.system, backbone, spec.get("plugins"), settings)
            records = run_system(backbone, system, args.task, episodes, args.split, args.budget,
                                 spec["consolidation_factor"], decode)
    except UrdError as exc:
        print(f"urd run FAILED: {exc}", file=sys.stderr)
        return 1
    atomic_write_jsonl(args.out, records)
    print(f"wrote {len(records)} responses to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
