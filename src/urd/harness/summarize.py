"""Fold a scale's responses into summary.json, and rescore it offline.

    python -m urd.harness.summarize --scale tiny --responses R... --fiches F... --static '{...}' --out results/urd/tiny/summary.json
    python -m urd.harness.summarize --rescore results/urd/tiny     # rebuild every figure, compare, exit 1 on any difference

Only the files named on the command line are read (the rule's declared inputs): a folder holding
another run's extra cells gives the same summary. Layout: <root>/control/<task>/responses.jsonl
and <root>/<system>/<task>/<split>/responses.jsonl. summary.json lists every file it was folded
from, and every cell's fiches, with their SHA-256 (`provenance.inputs`, paths relative to its
folder); --rescore reads exactly those.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.errors import InputError, UrdError
from ..core.io import atomic_write_json, read_jsonl, sha256_file
from .fold import fold, sandbox_summary, verdict_drift
from .run import sandbox_label


def cell_key(path: Path) -> tuple:
    """("control", task, None) or (system, task, split), from a responses.jsonl path."""
    parts = path.parts
    if len(parts) >= 3 and parts[-3] == "control":
        return ("control", parts[-2], None)
    if len(parts) < 4:
        raise InputError(path, "<path>", ".../control/<task>/responses.jsonl or .../<system>/<task>/<split>/responses.jsonl")
    return tuple(parts[-4:-1])


def collect(paths: list[str | Path]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for path in map(Path, paths):
        if not path.is_file():
            raise InputError(path, "<file>", "an existing responses.jsonl (build it with snakemake first)")
        recs = read_jsonl(path)
        if not recs:
            raise InputError(path, "<file>", "one response per evaluated query", "an empty file")
        out[cell_key(path)] = recs
    return out


def rescore(root: str | Path) -> tuple[bool, list[str]]:
    """Recompute every figure from the responses summary.json lists and compare."""
    root = Path(root)
    summary_path = root / "summary.json"
    if not summary_path.is_file():
        raise InputError(summary_path, "<file>", "a summary.json built by the workflow")
    saved = json.loads(summary_path.read_text())
    listed = saved.get("provenance", {}).get("inputs", {}).get("responses")
    if not listed:
        raise InputError(summary_path, "provenance.inputs.responses", "the responses it was folded from (rebuild it)")
    problems = []
    for rel, digest in sorted(listed.items()):
        path = root / rel
        if not path.is_file():
            raise InputError(path, "<file>", f"the responses summary.json was folded from (SHA-256 {digest})")
        if sha256_file(path) != digest:
            problems.append(f"{rel}: SHA-256 differs from the one summary.json recorded")
    responses = collect([root / rel for rel in sorted(listed)])
    fresh = fold(responses)
    for key in ("control", "cells"):
        if saved.get(key) != fresh[key]:
            problems.append(f"{key}: summary.json differs from the figures rebuilt from responses.jsonl")
    drift = verdict_drift(responses)
    if drift:
        problems.append(f"{len(drift)} stored verdicts differ from a fresh judgement (first: {drift[0]})")
    return not problems, problems


def provenance(args) -> dict:
    from ..core.provenance import code_digest, git_commit, package_versions

    prov = json.loads(args.static)
    if args.checkpoint_stamp:
        prov["checkpoint_sha256"] = Path(args.checkpoint_stamp).read_text().split()[0]
        # which check admitted the checkpoint: its pin, or (a learned one trained elsewhere) its behaviour
        prov["checkpoint_check"] = (json.loads(Path(args.checkpoint_check).read_text())
                                    if args.checkpoint_check else {"check": "sha256"})
    if args.manifest:
        prov["data_manifest_sha256"] = sha256_file(args.manifest)
    prov["package_code_sha256"] = code_digest("urd.harness.summarize")
    prov["commit"] = git_commit()
    prov["packages"] = package_versions()
    return prov


def _relative(paths: list[str], root: Path) -> dict[str, str]:
    return {str(Path(p).relative_to(root)): sha256_file(p) for p in sorted(paths)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.harness.summarize")
    ap.add_argument("--rescore", metavar="ROOT", help="rebuild figures from responses and compare")
    ap.add_argument("--scale")
    ap.add_argument("--responses", nargs="+", default=[], help="every responses.jsonl to fold (control included)")
    ap.add_argument("--fiches", nargs="*", default=[], help="the cells' fiches.jsonl (recorded by SHA-256)")
    ap.add_argument("--static", default="{}", help="provenance known when the DAG is built (JSON)")
    ap.add_argument("--checkpoint-stamp", help="the verify stamp of the checkpoint")
    ap.add_argument("--checkpoint-check", help="which check admitted a learned checkpoint (urd.learn.check)")
    ap.add_argument("--manifest", help="the data manifest the responses' data was verified against")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    try:
        if args.rescore:
            ok, problems = rescore(args.rescore)
            for p in problems:
                print(f"rescore: {p}", file=sys.stderr)
            print("rescore: identical" if ok else "rescore: DIFFERENT", file=sys.stderr)
            return 0 if ok else 1
        if not args.out or not args.responses:
            ap.error("--out and --responses are required (or --rescore ROOT)")
        root = Path(args.out).parent
        figs = fold(collect(args.responses))
        # diagnostics (e.g. replay_banc) are labelled at the top too: never ranked with the rest
        ooc = sorted(s for s, tasks in figs["cells"].items()
                     if any(c["out_of_contract"] for splits in tasks.values() for c in splits.values()))
        prov = provenance(args)
        prov["inputs"] = {"responses": _relative(args.responses, root), "fiches": _relative(args.fiches, root)}
        prov["sandbox"] = sandbox_summary(figs, sandbox_label())
        summary = {"scale": args.scale, **figs, "out_of_contract_systems": ooc, "provenance": prov}
    except UrdError as exc:
        print(f"urd summarize FAILED: {exc}", file=sys.stderr)
        return 1
    atomic_write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
