"""The planting report's numbers, derived from the judged decisions alone (pure functions).

Per arm: median prompt tokens, hits per plant category (a plant scores when the judge ruled
it shaped any of the decision's intents) out of the planted decisions, the same in the
unplanted twin, net hits (planted minus unplanted, all categories), net hits per 1K prompt
tokens, citations of each plant's ID beside the judge's hits, fabricated citations (cited
IDs the store does not hold), and a 95 % interval on net hits from resampling the
(character, seed) units with replacement. Factor credits: the difference between two arms
that differ in exactly one feature; pairs that differ in more are listed, uncredited. The
wound counterfactual: wound hits without the apology minus with it, per arm.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

import numpy as np

from ..core.io import canonical_json, sha256_bytes
from ..tables.bootstrap import resample_indices
from . import arms as arms_mod
from .world import PLANTS

RESAMPLES, LEVEL, BOOT_SEED = 10_000, 0.95, 20260807
METHOD = ("percentile bootstrap over (character, seed) units resampled with replacement; indices from "
          "urd.core.rng (SHA-256 stream)")


def hit(d: dict, plant: str) -> int:
    rulings = d["judged"].get(plant)
    return int(bool(rulings) and any(r["shaped"] for r in rulings))


def _units(decisions: Iterable[dict]) -> dict[tuple[str, int], dict]:
    return {(d["character"], d["seed"]): d for d in decisions}


def interval(values: list[float]) -> dict:
    """The sum of per-unit values and its percentile bootstrap interval."""
    if not values:
        return {"point": None, "low": None, "high": None, "units": 0}
    v = np.asarray(values, dtype=float)
    sums = v[resample_indices(len(v), RESAMPLES, BOOT_SEED)].sum(axis=1)
    lo, hi = np.quantile(sums, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2])
    return {"point": float(v.sum()), "low": float(lo), "high": float(hi), "units": len(v)}


def arm_numbers(decisions: list[dict], arm: str, bytes_per_token: float) -> dict:
    """One arm's numbers over its paired units: the (character, seed) pairs decided in both the
    planted world and its unplanted twin (all 36 in a complete run; in a run stopped part way,
    only those, so that a hit is never subtracted without its twin)."""
    by = {v: _units(d for d in decisions if d["arm"] == arm and d["variant"] == v)
          for v in ("planted", "unplanted", "apologised")}
    paired = sorted(set(by["planted"]) & set(by["unplanted"]))
    planted = [by["planted"][u] for u in paired]
    twin = [by["unplanted"][u] for u in paired]
    hits = {p: sum(hit(d, p) for d in planted) for p in PLANTS}
    base = {p: sum(hit(d, p) for d in twin) for p in PLANTS}
    tokens = [d["prompt_tokens"] for d in planted]
    median = statistics.median(tokens) if tokens else None
    # The arm's whole token cost a decision: its prompt plus what building the context asked
    # (the layered arm's summary, a plug-in's retrieval); reports before that field count 0.
    strategy = [d.get("strategy_tokens", 0) for d in planted]
    total = statistics.median(t + s for t, s in zip(tokens, strategy)) if tokens else None
    net = sum(hits.values()) - sum(base.values()) if paired else None
    cf = sorted(set(by["planted"]) & set(by["apologised"]))
    measured = bool(tokens) and all(d["tokens_measured"] for d in planted)
    return {
        "arm": arm,
        "decisions": {v: len(u) for v, u in by.items()},
        "paired_units": len(paired),
        "prompt_tokens_median": median,
        "prompt_tokens_source": "measured usage" if measured else
        f"estimated at {bytes_per_token:g} bytes a token (no measured usage)",
        "hits": hits,
        "unplanted_hits": base,
        "net_hits": net,
        "net_hits_per_1k_tokens": round(net / (median / 1000), 2) if median and net is not None else None,
        "strategy_tokens_median": statistics.median(strategy) if strategy else None,
        "strategy_calls": sum(d.get("strategy_calls", 0) for d in planted),
        "total_tokens_median": total,
        "net_hits_per_1k_total_tokens": round(net / (total / 1000), 2) if total and net is not None else None,
        "net_hits_interval": interval([sum(hit(a, p) - hit(b, p) for p in PLANTS) for a, b in zip(planted, twin)]),
        "citations": {p: sum(d["plant_ids"].get(p) in {x for it in d["intents"] for x in it["cites"]}
                             for d in planted) for p in PLANTS},
        "judged_influence": hits,
        "fabricated_citations": sum(len(d["fabricated"]) for d in planted),
        "fabricated_examples": sorted({x for d in planted for x in d["fabricated"]})[:5],
        "unparsed_decisions": sum(not d["parsed"] for v in by.values() for d in v.values()),
        "judge_off_protocol": sum(r is None for v in by.values() for d in v.values() for r in d["judged"].values()),
        "counterfactual_wound": {
            "not_apologised": sum(hit(by["planted"][u], "wound") for u in cf),
            "apologised": sum(hit(by["apologised"][u], "wound") for u in cf),
            "difference": interval([hit(by["planted"][u], "wound") - hit(by["apologised"][u], "wound") for u in cf]),
        },
    }


def factor_credits(arms: list[arms_mod.Arm], numbers: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    single, multi = arms_mod.credit_pairs(arms)
    credits = []
    for a, b, feature in single:
        na, nb = numbers[a.name], numbers[b.name]
        if na["net_hits"] is None or nb["net_hits"] is None:
            continue  # an arm with no paired unit has nothing to credit
        credits.append({"factor": feature, "from": a.name, "to": b.name,
                        "change": f"{feature}: {a.features.get(feature, 'absent')} -> {b.features.get(feature, 'absent')}",
                        "credit": {**{p: nb["hits"][p] - na["hits"][p] for p in PLANTS},
                                   "net_hits": nb["net_hits"] - na["net_hits"]}})
    refused = [{"from": a.name, "to": b.name, "differ_in": differ,
                "why": "the arms differ in more than one feature: no factor is credited" if differ
                else "the arms declare the same features: there is no factor to credit"} for a, b, differ in multi]
    return credits, refused


def build(run, state: dict, *, world_sha256: str, calibration: dict) -> dict:
    bpt = float(run.s.raw["estimate"]["bytes_per_token"])
    numbers = {a.name: arm_numbers(run.decisions, a.name, bpt) for a in run.arms}
    credits, refused = factor_credits(run.arms, numbers)
    return {
        "suite": "planting",
        "model": run.model,
        "routes": run.routes.as_dict(),
        "status": state["status"],
        "stop": state["stop"],
        "scripted_note": "the scripted arm tests the harness, not a model" if run.model == "scripted" else None,
        "world": {"path": str(run.world_path), "sha256": world_sha256, "seeds": run.shape.seeds,
                  "terms": run.shape.terms, "events_per_term": run.shape.events_per_term,
                  "characters": [c["id"] for c in run.roster["characters"]], "decision_term": run.shape.decision_term},
        "settings_sha256": sha256_bytes(canonical_json(run.p).encode()),
        "arms": [{"name": a.name, "features": dict(a.features), **({"strategy": a.source} if a.source != "built-in" else {})}
                 for a in run.arms],
        "calibration_set": {"version": calibration["version"], "sha256": calibration["sha256"],
                            "path": calibration["path"]},
        "calibration": state["calibration"],
        "gate": state["gate"],
        "interval_method": {"method": METHOD, "resamples": RESAMPLES, "level": LEVEL, "seed": BOOT_SEED},
        "numbers": [numbers[a.name] for a in run.arms],
        "factor_credits": credits,
        "not_credited": refused,
        "meter": run.meter.summary(),
        "leaks": run.meter.leaks(),
        "decisions": run.decisions,
    }
