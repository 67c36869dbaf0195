"""The planting report's numbers, derived from the judged decisions alone (pure functions).

Per arm: median prompt tokens, hits per plant category (a plant scores when the judge ruled
it shaped any of the decision's intents) out of the planted decisions, the same in the
unplanted twin, net hits (planted minus unplanted, all categories), net hits per 1K prompt
tokens, citations of each plant's ID beside the judge's hits, fabricated citations (cited IDs
the decision's prompt did not show: a real event the arm summarised or dropped, or no such
event at all, counted apart), replies off the protocol or short of three intents, and 95 %
intervals. Factor credits: the difference in net hits (per plant and in all) between two arms
that differ in exactly one feature, with intervals; pairs that differ in more are listed,
uncredited. The wound counterfactual: wound hits without the apology minus with it, per arm.

Intervals are cluster-aware: a (character, seed) unit shares its character's profile and
motivation with the character's other seeds, so characters are resampled first, then seeds
within each drawn character, with the same draws for every arm (credits are paired).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from ..core.io import canonical_json, sha256_bytes
from ..core.rng import Stream
from . import arms as arms_mod
from .routes import relation
from .world import PLANT_CATEGORY, PLANTS

RESAMPLES, LEVEL, BOOT_SEED = 10_000, 0.95, 20260807
METHOD = ("two-stage percentile bootstrap: characters resampled with replacement, then the seeds of each drawn "
          "character with replacement (a character's units share its profile and motivation); indices from "
          "urd.core.rng (SHA-256 stream), the same draws for every arm, so factor credits are paired")

Unit = tuple[str, int]  # (character, seed)


def hit(d: dict, plant: str) -> int:
    rulings = d["judged"].get(plant)
    return int(bool(rulings) and any(r["shaped"] for r in rulings))


def _units(decisions: Iterable[dict]) -> dict[Unit, dict]:
    return {(d["character"], d["seed"]): d for d in decisions}


@lru_cache(maxsize=16)
def cluster_plan(sizes: tuple[int, ...], resamples: int = RESAMPLES, seed: int = BOOT_SEED) -> np.ndarray:
    """(resamples, len(sizes) x max(sizes)) positions into units laid out cluster by cluster.

    Each resample draws len(sizes) clusters with replacement, then as many of each drawn
    cluster's units as it has, with replacement; a slot past a drawn cluster's size holds
    sum(sizes), the padding position (a NaN in `draws`)."""
    if not sizes or min(sizes) < 1:
        raise ValueError(f"cluster sizes must be positive, got {sizes}")
    stream = Stream("urd-planting-cluster-bootstrap", seed, resamples, *sizes)
    n_clusters, width, n = len(sizes), max(sizes), sum(sizes)
    offsets = [sum(sizes[:k]) for k in range(n_clusters)]
    rows = []
    for _ in range(resamples):
        row = []
        for _ in range(n_clusters):
            c = stream.below(n_clusters)
            row += [offsets[c] + stream.below(sizes[c]) for _ in range(sizes[c])] + [n] * (width - sizes[c])
        rows.append(row)
    out = np.asarray(rows, dtype=np.int64)
    out.setflags(write=False)
    return out


class Resampled:
    """The bootstrap over some units: their clusters (characters) and the draws."""

    def __init__(self, units: Iterable[Unit]) -> None:
        self.units = sorted(units)
        chars = sorted({c for c, _ in self.units})
        self.characters = len(chars)
        self.idx = cluster_plan(tuple(sum(u[0] == c for u in self.units) for c in chars)) if self.units else None

    def draws(self, values: Sequence[float]) -> np.ndarray:
        """(resamples, width) values of the resampled units, NaN in the padding."""
        return np.append(np.asarray(values, dtype=float), np.nan)[self.idx]

    def interval(self, point: float | None, samples: np.ndarray | None) -> dict:
        if point is None or samples is None or not self.units:
            return {"point": point, "low": None, "high": None, "units": len(self.units), "characters": self.characters}
        samples = samples[np.isfinite(samples)]
        lo, hi = np.quantile(samples, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2])
        return {"point": point, "low": float(lo), "high": float(hi), "units": len(self.units),
                "characters": self.characters}

    def sum_interval(self, values: Sequence[float]) -> dict:
        """The sum of per-unit values and its interval."""
        if not self.units:
            return self.interval(None, None)
        return self.interval(float(np.sum(values)), np.nansum(self.draws(values), axis=1))

    def per_1k(self, net: Sequence[float], tokens: Sequence[float]) -> tuple[float | None, np.ndarray | None]:
        """Net hits per 1K tokens (the sum over the median), the point rounded as reported, and its draws."""
        if not self.units or not statistics.median(tokens):
            return None, None
        point = round(sum(net) / (statistics.median(tokens) / 1000), 2)
        return point, np.nansum(self.draws(net), axis=1) / (np.nanmedian(self.draws(tokens), axis=1) / 1000)


def interval(units: Sequence[Unit], values: Sequence[float]) -> dict:
    """The sum of per-unit values (aligned with ``units``) and its cluster-aware interval."""
    order = sorted(range(len(units)), key=lambda i: units[i])
    return Resampled(units).sum_interval([values[i] for i in order])


#: The world each plant's headline hits are read in. The study's wound was apologised, so its
#: column is the apologised world's (the counterfactual, not apologised minus apologised, is
#: reported beside it); the promise and identity columns are the planted world's.
HEADLINE_WORLD = {"wound": "apologised", "promise": "planted", "identity": "planted"}


def headline(unit: dict[str, dict], plant: str) -> dict:
    """The decision a unit's `plant` column is read from (variant -> decision of one unit)."""
    return unit[HEADLINE_WORLD[plant]]


def crowded(d: dict, plant: str) -> int:
    """1 when `plant` did not score because the decision's three intent slots were all taken by
    other plants: every intent ruled shaped by some other plant, none by this one."""
    if hit(d, plant) or len(d["intents"]) < 3:
        return 0
    others = [d["judged"].get(q) or [] for q in PLANTS if q != plant]
    return int(all(any(i < len(r) and r[i]["shaped"] for r in others) for i in range(len(d["intents"]))))


def slot_crowding(numbers: Sequence[dict]) -> dict:
    """Whether the identity column can be read on its own: with three intent slots, promises and
    wounds crowd identity out. Not readable when two arms' shares of crowded-out decisions differ
    by more than the noise band (their 95 % intervals do not overlap)."""
    ivs = {n["arm"]: n["crowded_out_interval"]["identity"] for n in numbers if n.get("crowded_out_interval")}
    apart = [(a, b) for a in ivs for b in ivs if a < b and ivs[a]["low"] is not None and ivs[b]["low"] is not None
             and (ivs[a]["high"] < ivs[b]["low"] or ivs[b]["high"] < ivs[a]["low"])]
    return {"identity_readable_alone": not apart,
            "why": None if not apart else "identity crowded out of all three slots in different shares of decisions: "
            + "; ".join(f"{a} {ivs[a]['point']:g} ({ivs[a]['low']:g} to {ivs[a]['high']:g}) against {b} {ivs[b]['point']:g} "
                        f"({ivs[b]['low']:g} to {ivs[b]['high']:g})" for a, b in apart)}


def unit_values(decisions: list[dict], arm: str) -> dict[Unit, dict]:
    """Per paired unit of one arm (decided in the planted, the apologised and the unplanted
    world): net hits per plant (its headline world minus the twin), prompt tokens and prompt
    plus strategy tokens of the planted decision."""
    by = {v: _units(d for d in decisions if d["arm"] == arm and d["variant"] == v)
          for v in ("planted", "apologised", "unplanted")}
    out = {}
    for u in sorted(set(by["planted"]) & set(by["apologised"]) & set(by["unplanted"])):
        unit = {v: by[v][u] for v in by}
        out[u] = {"net": {p: hit(headline(unit, p), p) - hit(unit["unplanted"], p) for p in PLANTS},
                  "tokens": unit["planted"]["prompt_tokens"],
                  "total": unit["planted"]["prompt_tokens"] + unit["planted"].get("strategy_tokens", 0)}
    return out


def arm_numbers(decisions: list[dict], arm: str, bytes_per_token: float) -> dict:
    """One arm's numbers over its paired units: the (character, seed) pairs decided in both the
    planted world and its unplanted twin (all 36 in a complete run; in a run stopped part way,
    only those, so that a hit is never subtracted without its twin)."""
    by = {v: _units(d for d in decisions if d["arm"] == arm and d["variant"] == v)
          for v in ("planted", "unplanted", "apologised")}
    values = unit_values(decisions, arm)
    paired = sorted(values)
    planted = [by["planted"][u] for u in paired]
    twin = [by["unplanted"][u] for u in paired]
    shown = {p: [headline({v: by[v][u] for v in by}, p) for u in paired] for p in PLANTS}  # each column's world
    hits = {p: sum(hit(d, p) for d in shown[p]) for p in PLANTS}
    base = {p: sum(hit(d, p) for d in twin) for p in PLANTS}
    tokens = [d["prompt_tokens"] for d in planted]
    # The arm's whole token cost a decision: its prompt plus what building the context asked
    # (the layered arm's summary, a plug-in's retrieval); reports before that field count 0.
    strategy = [d.get("strategy_tokens", 0) for d in planted]
    totals = [values[u]["total"] for u in paired]
    net_units = [sum(values[u]["net"].values()) for u in paired]
    rs = Resampled(paired)
    per_1k, per_1k_draws = rs.per_1k(net_units, tokens)
    per_1k_total, per_1k_total_draws = rs.per_1k(net_units, totals)
    cf = sorted(set(by["planted"]) & set(by["apologised"]))
    measured = bool(tokens) and all(d["tokens_measured"] for d in planted)
    every = [d for v in by.values() for d in v.values()]
    return {
        "arm": arm,
        "decisions": {v: len(u) for v, u in by.items()},
        "paired_units": len(paired),
        "prompt_tokens_median": statistics.median(tokens) if tokens else None,
        "prompt_tokens_source": "measured usage" if measured else
        f"estimated at {bytes_per_token:g} bytes a token (no measured usage)",
        "hits": hits,
        "unplanted_hits": base,
        "net_hits": sum(net_units) if paired else None,
        "net_hits_per_1k_tokens": per_1k,
        "strategy_tokens_median": statistics.median(strategy) if strategy else None,
        "strategy_calls": sum(d.get("strategy_calls", 0) for d in planted),
        "total_tokens_median": statistics.median(totals) if totals else None,
        "net_hits_per_1k_total_tokens": per_1k_total,
        "net_hits_interval": rs.sum_interval(net_units),
        # every count has its interval, from the same draws (the README's promise)
        "hits_interval": {p: rs.sum_interval([hit(d, p) for d in shown[p]]) for p in PLANTS},
        "unplanted_hits_interval": rs.sum_interval([sum(hit(d, p) for p in PLANTS) for d in twin]),
        "fabricated_citations_interval": rs.sum_interval([len(d["fabricated"]) for d in planted]),
        # decisions where a plant scored nothing because other plants took all three intent slots
        "crowded_out": {p: sum(crowded(d, p) for d in shown[p]) for p in PLANTS},
        "crowded_out_interval": {p: rs.sum_interval([crowded(d, p) for d in shown[p]]) for p in PLANTS},
        "net_hits_per_1k_tokens_interval": rs.interval(per_1k, per_1k_draws),
        "net_hits_per_1k_total_tokens_interval": rs.interval(per_1k_total, per_1k_total_draws),
        "citations": {p: sum(d["plant_ids"].get(p) in {x for it in d["intents"] for x in it["cites"]}
                             for d in shown[p]) for p in PLANTS},
        "headline_world": dict(HEADLINE_WORLD),
        "judged_influence": hits,
        # cited IDs the prompt did not show: a real event summarised or dropped, or no such event
        "fabricated_citations": sum(len(d["fabricated"]) for d in planted),
        "fabricated_not_shown": sum(len(d.get("fabricated_not_shown", [])) for d in planted),
        "fabricated_no_such_event": sum(len(d.get("fabricated_no_such_event", [])) for d in planted),
        "fabricated_examples": sorted({x for d in planted for x in d["fabricated"]})[:5],
        "unparsed_decisions": sum(not d["parsed"] for d in every),
        "short_replies": sum(d["parsed"] and len(d["intents"]) < 3 for d in every),
        "judge_off_protocol": sum(r is None for d in every for r in d["judged"].values()),
        "counterfactual_wound": {
            "not_apologised": sum(hit(by["planted"][u], "wound") for u in cf),
            "apologised": sum(hit(by["apologised"][u], "wound") for u in cf),
            "difference": Resampled(cf).sum_interval(
                [hit(by["planted"][u], "wound") - hit(by["apologised"][u], "wound") for u in cf]),
        },
    }


def credit(a: dict[Unit, dict], b: dict[Unit, dict]) -> dict | None:
    """From arm a to arm b, on the units both decided: the change in net hits per plant and in
    all, and in net hits per 1K prompt tokens, each with its paired cluster-aware interval."""
    common = sorted(set(a) & set(b))
    if not common:
        return None
    rs = Resampled(common)
    out, ivs = {}, {}
    for p in PLANTS:
        diff = [b[u]["net"][p] - a[u]["net"][p] for u in common]
        out[p], ivs[p] = int(sum(diff)), rs.sum_interval(diff)
    net_a, net_b = [sum(a[u]["net"].values()) for u in common], [sum(b[u]["net"].values()) for u in common]
    out["net_hits"] = sum(net_b) - sum(net_a)
    ivs["net_hits"] = rs.sum_interval([y - x for x, y in zip(net_a, net_b)])
    pa, da = rs.per_1k(net_a, [a[u]["tokens"] for u in common])
    pb, db = rs.per_1k(net_b, [b[u]["tokens"] for u in common])
    per = None if pa is None or pb is None else round(pb - pa, 2)
    ivs["net_hits_per_1k_tokens"] = rs.interval(per, None if per is None else db - da)
    return {"credit": out, "net_hits_per_1k_tokens": per, "intervals": ivs, "units": len(common)}


def factor_credits(arms: list[arms_mod.Arm], decisions: list[dict]) -> tuple[list[dict], list[dict]]:
    single, multi = arms_mod.credit_pairs(arms)
    values = {a.name: unit_values(decisions, a.name) for a in arms}
    credits = []
    for a, b, feature in single:
        c = credit(values[a.name], values[b.name])
        if c is None:
            continue  # no unit decided in both arms: nothing to credit
        credits.append({"factor": feature, "from": a.name, "to": b.name,
                        "change": f"{feature}: {a.features.get(feature, 'absent')} -> {b.features.get(feature, 'absent')}",
                        **c})
    refused = [{"from": a.name, "to": b.name, "differ_in": differ,
                "why": "the arms differ in more than one feature: no factor is credited" if differ
                else "the arms declare the same features: there is no factor to credit"} for a, b, differ in multi]
    return credits, refused


def layered_layout(run) -> dict | None:
    """Where the layered arms cut the past, and which plants' categories the distant past keeps:
    a stated choice of the configuration, not a property of the method."""
    if not any(a.layered for a in run.arms):
        return None
    lay, terms = run.layout, list(range(1, run.shape.decision_term))
    kept = [p for p in PLANTS if PLANT_CATEGORY[p] in lay.keep_categories]
    return {"distant_terms": [t for t in terms if t < lay.summary_from],
            "summary_terms": [t for t in terms if lay.summary_from <= t < lay.current_from],
            "current_terms": [t for t in terms if t >= lay.current_from],
            "keep_categories": list(lay.keep_categories), "summary_words": lay.summary_words,
            "plants_kept_in_distant_past": kept,
            "plants_dropped_from_distant_past": [p for p in PLANTS if p not in kept],
            "note": "a plant in the distant past reaches a layered arm only when its category is kept; the kept "
                    "categories are a choice of agentmem.planting.layered.keep_categories",
            **_seeded_keep(run, lay)}


def _seeded_keep(run, lay) -> dict:
    """An arm with `keep: seeded` keeps as many categories, drawn by each world's seed without
    knowledge of the plants: which, seed by seed, and which plants' categories they hold."""
    if not any(a.seeded_keep for a in run.arms):
        return {}
    by_seed = {str(seed): list(lay.for_seed(seed, run.roster["filler"]["weights"]).keep_categories)
               for seed in range(1, run.shape.seeds + 1)}
    return {"seeded_keep": {
        "arms": [a.name for a in run.arms if a.seeded_keep],
        "keep_categories_by_seed": by_seed,
        "plants_kept_in_distant_past_by_seed": {k: [p for p in PLANTS if PLANT_CATEGORY[p] in v] for k, v in by_seed.items()},
        "note": "the sensitivity of the layered arm to its kept categories: the same count, drawn by the world's seed"}}


#: The study's third question: a judge is calibrated for a system only on that system's own
#: misjudgements. Below this many harvested from the characters' model, a live table says so.
MIN_OWN_MISJUDGEMENTS = 5
NOT_CALIBRATED = "judge not calibrated on this system's misjudgements"


def on_misjudgements(items: Sequence[dict], model: str) -> dict:
    """How many of a calibration set's hard negatives were harvested from `model`'s own runs
    (an item's `model`, or a source naming the model's run), and whether that is enough."""
    own = sum(1 for i in items if i["kind"] == "hard negative" and i.get("origin") == "harvested"
              and (i.get("model") == model or str(i.get("source", "")).startswith(f"{model} run")))
    return {"harvested_from_characters_model": own, "required_own_misjudgements": MIN_OWN_MISJUDGEMENTS,
            "calibrated_on_own_misjudgements": own >= MIN_OWN_MISJUDGEMENTS}


def build(run, state: dict, *, world_sha256: str, calibration: dict) -> dict:
    bpt = float(run.s.raw["estimate"]["bytes_per_token"])
    numbers = {a.name: arm_numbers(run.decisions, a.name, bpt) for a in run.arms}
    credits, refused = factor_credits(run.arms, run.decisions)
    return {
        "suite": "planting",
        "model": run.model,
        "routes": run.routes.as_dict(),
        "judge_model": {"characters": run.model, "judge": run.routes.by_purpose["judge"],
                        "relation": relation(run.model, run.routes.by_purpose["judge"])},
        "status": state["status"],
        "stop": state["stop"],
        "scripted_note": "the scripted arm tests the harness, not a model" if run.model == "scripted" else None,
        "world": {"path": str(run.world_path), "sha256": world_sha256, "seeds": run.shape.seeds,
                  "terms": run.shape.terms, "events_per_term": run.shape.events_per_term,
                  "characters": [c["id"] for c in run.roster["characters"]], "decision_term": run.shape.decision_term},
        "settings_sha256": sha256_bytes(canonical_json(run.p).encode()),
        "arms": [{"name": a.name, "features": dict(a.features), **({"strategy": a.source} if a.source != "built-in" else {})}
                 for a in run.arms],
        "layered_layout": layered_layout(run),
        "calibration_set": {"version": calibration["version"], "sha256": calibration["sha256"],
                            "path": calibration["path"], "hard_negatives": calibration["hard_negatives"],
                            **on_misjudgements(calibration["items"], run.model)},
        "calibration": state["calibration"],
        "gate": state["gate"],
        "interval_method": {"method": METHOD, "resamples": RESAMPLES, "level": LEVEL, "seed": BOOT_SEED},
        "numbers": [numbers[a.name] for a in run.arms],
        "factor_credits": credits,
        "not_credited": refused,
        "slot_crowding": slot_crowding([numbers[a.name] for a in run.arms]),
        "meter": run.meter.summary(),
        **({} if run.llm.ledger.path is None else {"ledger": run.llm.ledger.summary()}),
        **({"batches": run.llm.batch_events} if run.llm.batch_events else {}),
        "leaks": run.meter.leaks(),
        "decisions": run.decisions,
    }
