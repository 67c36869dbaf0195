"""Rung 2 — the Pareto frontier of recall x bits x consolidation FLOPs.

A sweep point is (fiche budget, consolidation cap factor). For one system and task, one job
consolidates every evaluated episode at every point (the transcripts' states are computed once
and shared by all points: urd.session.handle's prefix cache; a system with consolidate_sweep()
writes all points in one batch: urd.harness.runner.consolidate_points), and one job answers every point
together, each distinct (episode, fiche) decoded once: a system whose fiche does not depend on
the cap (gzip_tail, retrieval) is not decoded again per cap.

A point where the system breaks the contract (a consolidation over the cap, say summary at cap
0) is kept in the results as disqualified, with the BudgetViolation's message: loud, and never
on the frontier. Nothing is truncated.

Axes, per point: score = mean over episodes (T1 recall on seen keys, T2 discrimination), with a
percentile bootstrap interval over episodes; bits = 8 x the mean fiche bytes that crossed;
FLOPs = the mean consolidation FLOPs of an episode (urd.rung2.flops). A point dominates another
when it is at least as good on all three axes (score higher, bits and FLOPs lower) and better on
one; the frontier is the qualified points no point dominates (equal points are both on it).
"""

from __future__ import annotations

from collections import defaultdict

from ..core.errors import InputError
from ..harness import fiches
from ..harness.fold import _r, by_episode, sandbox_labels
from ..harness.runner import answer_cells, consolidate_points, judge_cell
from ..harness.scoring import episode_scores
from ..session.contract import BudgetViolation
from . import flops as flops_of


def point_label(budget: int, cap: int) -> str:
    return f"{budget}B@{cap}x"


def consolidate(system, task: str, sessions: list[dict], budgets: list[int], caps: list[int]) -> list[dict]:
    """Fiche records of every point, or one violation record per disqualified point."""
    points = [(budget, cap) for budget in budgets for cap in caps]
    done = consolidate_points(system, task, sessions, [(point_label(b, c), b, c) for b, c in points])
    out = []
    for (budget, cap), recs in zip(points, done):
        point = {"budget_point": budget, "cap_factor": cap}
        if isinstance(recs, BudgetViolation):  # labelled as a fiche record is: the summary reads it here
            out.append({**point, "system": system.name, "task": task, "violation": str(recs),
                        "out_of_contract": bool(system.out_of_contract)})
        else:
            out += [{**r, **point} for r in recs]
    return out


def read_points(path) -> tuple[dict[tuple[int, int], list[tuple[dict, bytes]]], dict[tuple[int, int], dict]]:
    """({point: [(record, fiche)]}, {point: its violation record}) from a sweep's fiche file."""
    from ..core.io import read_jsonl

    points: dict[tuple[int, int], list[tuple[dict, bytes]]] = defaultdict(list)
    violations = {}
    for n, rec in enumerate(read_jsonl(path), 1):
        key = (rec.get("budget_point"), rec.get("cap_factor"))
        if not all(isinstance(x, int) for x in key):
            raise InputError(path, f"line {n}", "budget_point and cap_factor (integers)", key)
        if "violation" in rec:
            if not isinstance(rec.get("violation"), str) or not isinstance(rec.get("out_of_contract"), bool):
                raise InputError(path, f"line {n}", "a violation record: violation (text) and out_of_contract (true or false)",
                                 {k: rec.get(k) for k in ("violation", "out_of_contract")})
            violations[key] = rec
        else:
            points[key].append((rec, fiches.read_one(rec, path, n)))
    return dict(points), violations


def answer(system, sessions_b: list[dict], points: dict[tuple[int, int], list[tuple[dict, bytes]]], decode) -> list[dict]:
    """Raw replies of every point, each distinct (episode, fiche) decoded once."""
    order = sorted(points)
    unique: dict[tuple[int, str], tuple[dict, bytes]] = {}  # (episode, fiche sha256) -> (record, fiche)
    for key in order:
        for rec, fiche in points[key]:
            unique.setdefault((rec["episode"], rec["fiche_sha256"]), (rec, fiche))
    shas = sorted(unique)
    # one cell per distinct (episode, fiche): that episode's queries from that fiche
    by_ep = {ep["episode"]: ep for ep in sessions_b}
    cells = []
    for sha in shas:
        rec, fiche = unique[sha]
        if rec["episode"] not in by_ep:
            raise InputError("fiches", f"episode {rec['episode']}", "an episode of the session-B view")
        cells.append(([by_ep[rec["episode"]]], [(rec, fiche)]))
    raws = dict(zip(shas, answer_cells(system, cells, decode, label=f"{system.name}/sweep")))
    out = []
    for key in order:
        for rec, _ in sorted(points[key], key=lambda p: p[0]["episode"]):
            raw = raws[(rec["episode"], rec["fiche_sha256"])]
            out += [{**r, "budget_point": key[0], "cap_factor": key[1]} for r in raw]
    return out


def judge(task: str, episodes: list[dict], raw: list[dict], points: dict, system: str, source: str) -> list[dict]:
    groups: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for r in raw:
        groups[(r["budget_point"], r["cap_factor"])].append(r)
    if set(groups) != set(points):
        raise InputError(source, "points", f"replies for the {len(points)} qualified points", sorted(groups))
    out = []
    for key in sorted(groups):
        recs = [rec for rec, _ in points[key]]
        judged = judge_cell(task, episodes, groups[key], recs, system, point_label(*key), source=source)
        out += [{**j, "budget_point": key[0], "cap_factor": key[1]} for j in judged]
    return out


# --- fold -----------------------------------------------------------------------------------
def dominates(p: dict, q: dict) -> bool:
    """p is at least as good as q on every axis and better on one."""
    ge = p["score"] >= q["score"] and p["bits"] <= q["bits"] and p["flops"] <= q["flops"]
    gt = p["score"] > q["score"] or p["bits"] < q["bits"] or p["flops"] < q["flops"]
    return ge and gt


def frontier(points: list[dict]) -> list[bool]:
    """For each point: on the frontier (qualified, scored, and dominated by none)."""
    ok = [p.get("status") == "ok" and p["score"] is not None for p in points]
    return [ok[i] and not any(ok[j] and dominates(points[j], points[i]) for j in range(len(points)) if j != i)
            for i in range(len(points))]


def fold_system(task: str, responses: list[dict], violations: dict[tuple[int, int], str], n_params: int, boot,
                system: str, out_of_contract: bool) -> list[dict]:
    """One entry per point of one system: score with interval, bits, FLOPs, tokens."""
    from .chains import _interval

    groups: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for r in responses:
        groups[(r["budget_point"], r["cap_factor"])].append(r)
    out = []
    for key in sorted(set(groups) | set(violations)):
        base = {"system": system, "budget_bytes": key[0], "cap_factor": key[1], "out_of_contract": out_of_contract}
        if key in violations:
            out.append({**base, "status": "disqualified", "reason": violations[key], "score": None,
                        "bits": None, "flops": None})
            continue
        eps = by_episode(groups[key])
        scores = [episode_scores(task, recs)["score"] for recs in eps.values()]
        first = {e: recs[0] for e, recs in eps.items()}
        fiche_bytes = [r["fiche_bytes"] for r in first.values()]
        metered = [r["metered_tokens"] for r in first.values()]
        flops = [flops_of.consolidation(n_params, m) for m in metered]
        iv = _interval(scores, boot)
        out.append({**base, "status": "ok", "score": iv["mean"], "ci_low": iv["ci_low"], "ci_high": iv["ci_high"],
                    "episodes": len(eps), "bits": _r(8 * sum(fiche_bytes) / len(fiche_bytes)),
                    "fiche_bytes_max": max(fiche_bytes),
                    "flops": _r(sum(flops) / len(flops)), "metered_tokens": _r(sum(metered) / len(metered)),
                    "sandbox": sandbox_labels(groups[key])})
    return out


def fold(task: str, systems: dict[str, dict]) -> dict:
    """systems: {name: {"points": [...]}} -> the task's table with the frontier marked."""
    points = [p for name in sorted(systems) for p in systems[name]["points"]]
    on = frontier(points)
    for p, f in zip(points, on):
        p["frontier"] = f
    return {"points": points, "frontier": [f"{p['system']} {point_label(p['budget_bytes'], p['cap_factor'])}"
                                           for p, f in zip(points, on) if f]}
