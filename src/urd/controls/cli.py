"""The control jobs, as the rules in rules/controls.smk call them.

    python -m urd.controls ceiling --checkpoint models/m.pth --scale 0.1b \
        --data t1=data/c1/t1.jsonl --data t2=data/t2.jsonl \
        --control t1=results/urd/0.1b/control/t1/responses.jsonl --control t2=... \
        --artifacts artifacts/replay/0.1b --recipes replay_tune,replay_banc --state-file time_state.npy \
        --spec '{...}' --out results/urd/0.1b/controls/ceiling.json --responses ....jsonl
    python -m urd.controls bits-curve ... --task t2 --recipes replay_banc --budgets 120,960,...,full ...

A recipe's out-of-contract label comes from its system class in the registry (the replay
systems declare it), so the control and the benchmark cannot disagree on it.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import UrdError


def _pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def budgets_arg(text: str) -> list[int | None]:
    return [None if b == "full" else int(b) for b in text.split(",") if b]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.controls")
    ap.add_argument("what", choices=["ceiling", "bits-curve"])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--scale", required=True)
    ap.add_argument("--data", action="append", default=[], help="TASK=PATH (repeat)")
    ap.add_argument("--control", action="append", default=[], help="TASK=PATH of the control's responses (repeat)")
    ap.add_argument("--artifacts", required=True, help="artifacts/replay/{scale}")
    ap.add_argument("--recipes", required=True, help="comma-separated recipe (system) names")
    ap.add_argument("--state-file", required=True, help="the tuned state's file name in each artifact directory")
    ap.add_argument("--task", help="bits-curve: the task")
    ap.add_argument("--budgets", help="bits-curve: comma-separated bytes, 'full' for the whole state")
    ap.add_argument("--spec", required=True, help="the cell spec (urd.harness.run.cell_spec) as JSON")
    ap.add_argument("--static", default="{}", help="provenance known when the DAG is built (JSON)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--responses", required=True)
    ap.add_argument("--verified", nargs="*", default=[], help="verify stamps: their files are re-checked before use")
    args = ap.parse_args(argv)
    spec, static = json.loads(args.spec), json.loads(args.static)
    try:
        from ..core.verify import check_stamps

        check_stamps(args.verified)
        from ..backbone.adapter import Backbone
        from ..core.io import atomic_write_json, atomic_write_jsonl, read_jsonl, sha256_file
        from ..core.provenance import code_digest, git_commit, package_versions
        from ..harness.run import sandbox_label, select
        from ..session.context import Decode
        from ..systems import registry
        from .artifacts import ArtifactProvider
        from .evaluate import Recipe, bits_curve, ceiling

        recipes = []
        for name in [r for r in args.recipes.split(",") if r]:
            cls = registry.resolve(name, spec.get("plugins"))
            recipes.append(Recipe(name, ArtifactProvider(args.artifacts, name, args.state_file),
                                  bool(getattr(cls, "out_of_contract", False))))
        data, ctrl = _pairs(args.data), _pairs(args.control)
        tasks = [args.task] if args.what == "bits-curve" else sorted(data)
        episodes = {t: select(read_jsonl(data[t]), spec) for t in tasks}
        controls = {t: read_jsonl(ctrl[t]) if t in ctrl else None for t in tasks}
        decode = {t: Decode(max_new_tokens=spec["decode"][t]["max_new_tokens"]) for t in tasks}
        backbone = Backbone.load(args.checkpoint, strategy=spec["strategy"])
        factor = spec["consolidation_factor"]
        if args.what == "ceiling":
            result, records = ceiling(backbone, episodes, recipes, controls, factor, decode)
        else:
            (recipe,) = recipes
            t = args.task
            result, records = bits_curve(backbone, t, episodes[t], recipe, budgets_arg(args.budgets), controls[t],
                                         factor, decode[t])
        result = {"control": args.what.replace("-", "_"), "scale": args.scale, **result}
        result["provenance"] = {
            **static,
            "data": {p: sha256_file(p) for p in data.values()},
            "control_responses": {p: sha256_file(p) for p in ctrl.values()},
            "artifacts": {r.name: r.provider.served for r in recipes},
            "package_code_sha256": code_digest("urd.controls.__main__", "urd.systems.replay"),
            "commit": git_commit(),
            "packages": package_versions(),
            "sandbox": sandbox_label(),
        }
    except UrdError as exc:
        print(f"urd controls FAILED: {exc}", file=sys.stderr)
        return 1
    atomic_write_jsonl(args.responses, records)
    atomic_write_json(args.out, result)
    print(f"wrote {args.out} and {len(records)} responses to {args.responses}", file=sys.stderr)
    return 0
