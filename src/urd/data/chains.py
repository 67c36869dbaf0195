"""Rung 2 — session chains A1..An from the master seed.

A chain is n rung-1 sessions in a row. Each session is generated like a rung-1 episode from its
own stream ("urd2", master seed, "chain", variant, chain, session), so session 3 of chain 2 has
the same bytes whether 2 or 600 chains are generated. Variants:

- t1: each session 64 fresh key->value pairs; no key of a chain (shown, or asked as unseen)
  appears in two of its sessions, so a later session never answers an earlier one's question.
- t2: each session its own convention, a category no earlier session of the chain used and a
  marker no earlier session used (at most as many sessions as categories: 6).
- t2_conflict: interference. Every session of a chain keeps the first session's category and
  teaches a new marker for it: the conventions contradict each other.

Files, one per session so a job can be given exactly the sessions it may read:
data/urd2/chains/<variant>/s<k>.jsonl (every chain's session k, with the answers) and beside it
its session_a and session_b views (urd.data.views). The episode field is the chain's index: the
rung-1 harness keys everything on it, and within one session file it is unique.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_text, jsonl_text
from ..core.rng import Stream
from . import t1, t2, views

VARIANTS = {"t1": "t1", "t2": "t2", "t2_conflict": "t2"}  # variant -> the task it is judged as
ROOT = Path("data/urd2/chains")


def task_of(variant: str) -> str:
    if variant not in VARIANTS:
        raise InputError("config", "urd2.chains.variants", f"one of {', '.join(VARIANTS)}", variant)
    return VARIANTS[variant]


def session_path(variant: str, k: int, side: str | None = None) -> Path:
    """data/urd2/chains/<variant>/s<k>.jsonl, or one of its views."""
    full = ROOT / variant / f"s{k}.jsonl"
    return views.view_path(full, side) if side else full


def data_spec(config: dict) -> dict:
    """What the chain data depends on: a change elsewhere must not regenerate it."""
    return {"master_seed": config["master_seed"], "queries": config["queries"], "tasks": config["tasks"],
            "chains": config["urd2"]["data"]}


def check_sessions(variant: str, sessions: int) -> None:
    """Variant t2 gives each session its own category: no more sessions than categories."""
    if variant == "t2" and sessions > len(t2.CATEGORIES):
        raise InputError("config", "urd2.data.sessions",
                         f"at most {len(t2.CATEGORIES)} sessions for variant t2 (each its own category; "
                         "t2_conflict has no such limit)", sessions)


def chain(spec: dict, variant: str, c: int) -> list[dict]:
    """Sessions 1..n of chain `c`, in order."""
    seed, n = spec["master_seed"], spec["chains"]["sessions"]
    check_sessions(variant, n)
    out: list[dict] = []
    keys: set[str] = set()
    used_categories: list[str] = []
    markers: set[str] = set()
    for k in range(1, n + 1):
        root = Stream("urd2", seed, "chain", variant, c, k)
        ids = f"{task_of(variant)}-c{c:03d}-s{k:02d}"
        if variant == "t1":
            ep = t1.generate_episode(seed, c, spec["tasks"]["t1"], spec["queries"], root=root,
                                     exclude=frozenset(keys), ids=ids)
            keys |= {p["key"] for p in ep["pairs"]} | {q["key"] for q in ep["queries"]}
        else:
            if variant == "t2_conflict" and used_categories:
                allowed = (used_categories[0],)
            else:
                allowed = tuple(sorted(set(t2.CATEGORIES) - set(used_categories)))
            ep = t2.generate_episode(seed, c, spec["tasks"]["t2"], root=root, categories=allowed,
                                     exclude_markers=frozenset(markers), ids=ids)
            used_categories.append(ep["rule"]["category"])
            markers.add(ep["rule"]["marker"])
        out.append({**ep, "variant": variant, "chain": c, "session": k})
    return out


def sessions_by_index(spec: dict, variant: str) -> dict[int, list[dict]]:
    """{k: every chain's session k}, chains in order."""
    chains = [chain(spec, variant, c) for c in range(spec["chains"]["chains"])]
    return {k: [ch[k - 1] for ch in chains] for k in range(1, spec["chains"]["sessions"] + 1)}


def _view(side: str, ep: dict) -> dict:
    return {**views.VIEWS[side](ep), "session": ep["session"]}


def write(spec: dict, variant: str, root: str | Path = ".") -> list[Path]:
    """Every session file of `variant` and its two views; the paths written, relative to root."""
    written = []
    for k, eps in sessions_by_index(spec, variant).items():
        full = session_path(variant, k)
        atomic_write_text(Path(root) / full, jsonl_text(eps))
        written.append(full)
        for side in views.SIDES:
            path = session_path(variant, k, side)
            atomic_write_text(Path(root) / path, jsonl_text(_view(side, ep) for ep in eps))
            written.append(path)
    return written


def all_paths(spec: dict, variants) -> list[Path]:
    """Every file `write` makes for these variants (what the manifest pins)."""
    return [p for v in variants for k in range(1, spec["chains"]["sessions"] + 1)
            for p in (session_path(v, k), *(session_path(v, k, s) for s in views.SIDES))]


MANIFEST = Path("calibration/urd2/manifest.sha256")


def main(argv: list[str] | None = None) -> int:
    """python -m urd.data.chains [--check] [--write-manifest]: regenerate the chain data of the
    configured variants byte-for-byte (the Snakemake rule calibrate_chains passes --spec)."""
    import argparse
    import json
    import sys

    from ..core.config import load_config
    from ..core.errors import UrdError
    from ..core.manifest import pin_or_check

    ap = argparse.ArgumentParser(prog="python -m urd.data.chains", description=main.__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--config", default="config/config.yaml")
    src.add_argument("--spec", help="the chain data spec as JSON, as the Snakemake rule passes it")
    ap.add_argument("--check", action="store_true", help="verify the files against the manifest")
    ap.add_argument("--write-manifest", action="store_true", help="re-pin the manifest to this data")
    args = ap.parse_args(argv)
    try:
        spec = json.loads(args.spec) if args.spec else data_spec(load_config(args.config))
        files = [f for v in VARIANTS for f in write(spec, v)]
        print(f"wrote {len(files)} chain files under {ROOT}", file=sys.stderr)
        pin_or_check(MANIFEST, files, pin=args.write_manifest, check=args.check)
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
