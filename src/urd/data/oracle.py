"""The T1 oracle ceiling and the session statistics, computed from the generated data.

Oracle (an information bound): keys are free, each value costs value_length x 5 bits, and the
oracle stores the values with the most query mass first. Query mass: the hot quota shared equally
by the hot keys (found in the data as the keys exposed more than once), the cold quota by the
rest. At 120 B: 16 values = 8 hot + 8 cold -> 0.75 + 0.25 x 8/56 = 11/14 = 78.6 %.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from ..backbone.tokenizer import count_tokens
from .t1 import BITS_PER_SYMBOL


def key_masses(episode: dict, quota: dict) -> list[Fraction]:
    """Expected query mass of every exposed key, derived from the exposure lines."""
    exposures = Counter(p["key"] for p in episode["pairs"] for line in episode["lines"] if _shows(line, p))
    hot = [k for k, n in exposures.items() if n > 1]
    cold = [k for k, n in exposures.items() if n == 1]
    seen_quota = quota["hot"] + quota["cold"]
    hot_mass = Fraction(quota["hot"], seen_quota)
    masses = [hot_mass / len(hot)] * len(hot) if hot else []
    masses += [(1 - hot_mass) / len(cold)] * len(cold) if cold else []
    return sorted(masses, reverse=True)


def _shows(line: str, pair: dict) -> bool:
    return f" {pair['key']} " in f" {line} " and pair["value"] in line


def value_bits(episode: dict) -> int:
    return len(episode["pairs"][0]["value"]) * BITS_PER_SYMBOL


def ceiling(episode: dict, quota: dict, budget_bytes: int) -> tuple[Fraction, int]:
    """(expected recall of the best fiche of that size, values it holds)."""
    capacity = budget_bytes * 8 // value_bits(episode)
    masses = key_masses(episode, quota)
    return sum(masses[:capacity], Fraction(0)), min(capacity, len(masses))


def _stats(values: list[int]) -> dict:
    return {"per_episode": values, "mean": round(sum(values) / len(values), 1), "min": min(values), "max": max(values)}


def oracle_report(config: dict, t1_episodes: list[dict], t2_episodes: list[dict]) -> dict:
    quota = config["tasks"]["t1"]["quota"]
    budgets = config["profiles"][config["profile"]]["budgets"]
    splits = {}
    for split, budget in sorted(budgets.items()):
        per = [ceiling(ep, quota, budget) for ep in t1_episodes]
        mean = sum((c for c, _ in per), Fraction(0)) / len(per)
        splits[split] = {
            "budget_bytes": budget,
            "values_held": [n for _, n in per],
            "payload_bytes": len(t1_episodes[0]["pairs"]) * value_bits(t1_episodes[0]) // 8,
            "ceiling": round(float(mean), 3),
            "ceiling_exact": f"{mean.numerator}/{mean.denominator}",
        }
    return {
        "profile": config["profile"],
        "t1_oracle": splits,
        "sessions": {
            "t1_tokens": _stats([count_tokens(ep["transcript"]) for ep in t1_episodes]),
            "t1_tokenizer": "RWKV World rwkv_vocab_v20230424 (rwkv wheel)",
            "t2_bytes": _stats([len(ep["transcript"].encode("utf-8")) for ep in t2_episodes]),
        },
    }


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    import sys

    from ..core.io import atomic_write_json, read_jsonl, sha256_file
    from ..core.provenance import code_digest, git_commit, package_versions

    ap = argparse.ArgumentParser(prog="python -m urd.data.oracle")
    ap.add_argument("--spec", required=True, help="config subset as JSON (from the rule)")
    ap.add_argument("--t1", required=True)
    ap.add_argument("--t2", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--verified", nargs="*", default=[], help="verify stamps: their files are re-checked before use")
    args = ap.parse_args(argv)
    from ..core.errors import UrdError
    from ..core.verify import check_stamps

    try:
        check_stamps(args.verified)
    except UrdError as exc:
        print(f"urd oracle FAILED: {exc}", file=sys.stderr)
        return 1
    config = json.loads(args.spec)
    report = oracle_report(config, read_jsonl(args.t1), read_jsonl(args.t2))
    report["provenance"] = {
        "data": {args.t1: sha256_file(args.t1), args.t2: sha256_file(args.t2)},
        "manifest_sha256": sha256_file(args.manifest),
        "code_sha256": code_digest("urd.data.oracle"),
        "commit": git_commit(),
        "packages": package_versions(),
        "master_seed": config["master_seed"],
    }
    atomic_write_json(args.out, report)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
