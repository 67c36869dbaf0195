"""Rung 3's scores: every number a deterministic function of the replies' text.

Per reply, the type's checker on both sides (`keeps`: does it keep side 0, side 1?); the sides
are mutually exclusive by construction (urd.data.rung3.kinds.validate). An empty, truncated or
enormous reply keeps no side: a failure, never a crash.

Per episode and type:
- unscoped type: adherence to the taught side on its triggers, minus the base rate of that side:
  how often the same cell's replies keep it in the episodes that taught the other side. Half the
  episodes teach each side (urd.data.rung3.episodes), so a habit (always one side) scores exactly
  0: it keeps side s as often where s was taught as where it was not;
- scoped type: discrimination, as T2's, of the same corrected adherence: on triggers minus on
  non-triggers. A habit that reads the scope off the request (a shebang in scripts/ and nowhere
  else) scores 0 too, and so does applying the taught side everywhere.
The bases are the cell's, fixed over the bootstrap (its resamples redraw episodes, not the base).
An episode's score is the mean over its types; a cell's the mean over episodes. Stale rate: of the
trigger replies of updated types, the share that keep the superseded side; `stale_excess` less the
rate at which that side is kept where it was never stated.
"""

from __future__ import annotations

from collections import defaultdict

from ..data.rung3 import Family
from ..data.rung3.code import parse
from ..harness.runner import joined

MAX_REPLY_CHARS = 20_000  # a reply past this keeps no side (counted as `cut_replies`)


def judge(family: Family, episodes: list[dict], raw: list[dict], source: str = "raw replies") -> list[dict]:
    """One record per evaluated query: the reply joined with what was taught, both checks."""
    out = []
    for ep, q, r in joined(episodes, raw, source):
        reply = r["response"]
        if not isinstance(reply, str):
            reply = ""
        kind = family.kind(q["type"])
        cut = len(reply) > MAX_REPLY_CHARS  # an enormous reply is a failure, not read to its end
        keeps = [False, False] if cut else [bool(kind.check(0, reply)), bool(kind.check(1, reply))]
        rec = {"task": family.name, "episode": ep["episode"], "query_id": q["id"], "type": q["type"],
               "kind": q["kind"], "side": q["side"], "stale_side": q["stale_side"], "response": reply,
               "keeps": keeps, "applied": keeps[q["side"]],
               "stale": keeps[q["stale_side"]] if q["stale_side"] is not None else None,
               "empty": not reply.strip(), "cut": cut}
        if family.name == "code":
            rec["parsed"] = not cut and parse(reply) is not None
        out.append(rec)
    return out


def _mean(xs) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def base_rates(family: Family, records: list[dict]) -> dict[tuple[str, str, int], float | None]:
    """(type, trigger or non_trigger, side) -> how often such a reply keeps that side in the
    episodes that taught the other side: what a reply keeps without having been taught it."""
    out = {}
    for kind in family.kinds:
        for what in ("trigger", "non_trigger"):
            for side in (0, 1):
                out[(kind.name, what, side)] = _mean(r["keeps"][side] for r in records if r["type"] == kind.name
                                                     and r["kind"] == what and r["side"] != side)
    return out


def _above_base(rs: list[dict], base: dict, kind: str, what: str) -> float | None:
    """Applied on `what` replies, minus the base rate of the taught side there."""
    mine = [r for r in rs if r["kind"] == what]
    if not mine:
        return None
    b = base.get((kind, what, mine[0]["side"]))
    return None if b is None else _mean(r["applied"] for r in mine) - b


def episode_scores(family: Family, records: list[dict]) -> dict[int, dict]:
    """episode -> {"score": mean over its types, "types": {type: its score or None}}."""
    base = base_rates(family, records)
    by = defaultdict(list)
    for r in records:
        by[(r["episode"], r["type"])].append(r)
    out: dict[int, dict] = {}
    for ep in sorted({r["episode"] for r in records}):
        types = {}
        for kind in family.kinds:
            rs = by.get((ep, kind.name), [])
            trig = _above_base(rs, base, kind.name, "trigger")
            if kind.scoped:
                # discrimination of what was taught: a habit that tells a scope from the request
                # alone (a shebang in scripts/ only) keeps its side where the other was taught too
                non = _above_base(rs, base, kind.name, "non_trigger")
                types[kind.name] = None if trig is None or non is None else trig - non
            else:
                types[kind.name] = trig
        scored = [v for v in types.values() if v is not None]
        out[ep] = {"score": _mean(scored), "types": types}
    return out


def stale_excess(records: list[dict]) -> float | None:
    """Of the trigger replies of updated types, the share that keep the superseded side, minus
    how often the same type's replies keep that side in episodes that never stated it (taught
    the other side, no update): what the superseded statement added, not the habit."""
    out = []
    for r in records:
        if r["stale"] is None or r["kind"] != "trigger":
            continue
        old = r["stale_side"]
        never = [x["keeps"][old] for x in records if x["type"] == r["type"] and x["kind"] == "trigger"
                 and x["side"] != old and x["stale_side"] is None]
        if never:
            out.append(r["stale"] - _mean(never))
    return _mean(out)


def cell(family: Family, records: list[dict]) -> dict:
    """A cell's figures: score, per-type scores, stale rate, failures, code correctness."""
    eps = episode_scores(family, records)
    stale = [r["stale"] for r in records if r["stale"] is not None and r["kind"] == "trigger"]
    out = {
        "score": _mean(e["score"] for e in eps.values() if e["score"] is not None),
        "episodes": [{"episode": ep, "score": e["score"], "types": e["types"]} for ep, e in eps.items()],
        "types": {k.name: _mean(e["types"][k.name] for e in eps.values() if e["types"][k.name] is not None)
                  for k in family.kinds},
        "applied_on_trigger": _mean(r["applied"] for r in records if r["kind"] == "trigger"),
        "applied_on_non_trigger": _mean(r["applied"] for r in records if r["kind"] == "non_trigger"),
        "stale_rate": _mean(stale),
        "stale_excess": stale_excess(records),
        "stale_queries": len(stale),
        "queries": len(records),
        "empty_replies": sum(r["empty"] for r in records),
        "cut_replies": sum(r["cut"] for r in records),
    }
    if family.name == "code":
        out["unparsed_replies"] = sum(not r["parsed"] for r in records)
        out["correct"] = _mean(bool(r["correct"]) for r in records if "correct" in r)
    return out
