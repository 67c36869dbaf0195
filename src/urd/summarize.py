"""Fold a scale's responses into summary.json, and rescore it offline.

    python -m urd.summarize --scale tiny --root results/urd/tiny --provenance '{...}' --out results/urd/tiny/summary.json
    python -m urd.summarize --rescore results/urd/tiny     # rebuild every figure, compare, exit 1 on any difference

Layout: <root>/control/<task>/responses.jsonl and <root>/<system>/<task>/<split>/responses.jsonl.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .harness.fold import fold, verdict_drift
from .io import atomic_write_json, read_jsonl


def collect(root: str | Path) -> dict[tuple, list[dict]]:
    root = Path(root)
    out: dict[tuple, list[dict]] = {}
    for path in sorted(root.glob("control/*/responses.jsonl")):
        out[("control", path.parent.name, None)] = read_jsonl(path)
    for path in sorted(root.glob("*/*/*/responses.jsonl")):
        system, task, split = path.parts[-4:-1]
        if system != "control":
            out[(system, task, split)] = read_jsonl(path)
    return out


def figures(root: str | Path) -> dict:
    return fold(collect(root))


def rescore(root: str | Path) -> tuple[bool, list[str]]:
    """Recompute every figure from responses.jsonl alone and compare with summary.json."""
    root = Path(root)
    saved = json.loads((root / "summary.json").read_text())
    fresh = figures(root)
    problems = []
    for key in ("control", "cells"):
        if saved.get(key) != fresh[key]:
            problems.append(f"{key}: summary.json differs from the figures rebuilt from responses.jsonl")
    drift = verdict_drift(collect(root))
    if drift:
        problems.append(f"{len(drift)} stored verdicts differ from a fresh judgement (first: {drift[0]})")
    return not problems, problems


def provenance(args) -> dict:
    from .io import sha256_file
    from .provenance import code_digest, git_commit, package_versions

    prov = json.loads(args.static)
    if args.checkpoint_stamp:
        prov["checkpoint_sha256"] = Path(args.checkpoint_stamp).read_text().split()[0]
    if args.manifest:
        prov["data_manifest_sha256"] = sha256_file(args.manifest)
    prov["package_code_sha256"] = code_digest("urd")
    prov["commit"] = git_commit()
    prov["packages"] = package_versions()
    return prov


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.summarize")
    ap.add_argument("--rescore", metavar="ROOT", help="rebuild figures from responses and compare")
    ap.add_argument("--scale")
    ap.add_argument("--root")
    ap.add_argument("--static", default="{}", help="provenance known when the DAG is built (JSON)")
    ap.add_argument("--checkpoint-stamp", help="the verify stamp of the checkpoint")
    ap.add_argument("--manifest", help="the data manifest the responses' data was verified against")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.rescore:
        ok, problems = rescore(args.rescore)
        for p in problems:
            print(f"rescore: {p}", file=sys.stderr)
        print("rescore: identical" if ok else "rescore: DIFFERENT", file=sys.stderr)
        return 0 if ok else 1
    figs = figures(args.root)
    # diagnostics (e.g. replay_banc) are labelled at the top too: never ranked with the rest
    ooc = sorted(s for s, tasks in figs["cells"].items()
                 if any(c["out_of_contract"] for splits in tasks.values() for c in splits.values()))
    summary = {"scale": args.scale, **figs, "out_of_contract_systems": ooc, "provenance": provenance(args)}
    atomic_write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
