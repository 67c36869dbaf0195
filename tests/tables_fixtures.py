"""Hand-made summaries for the table tests, folded by the real urd.harness.fold from hand-made
responses, so they have exactly the shape summary.json has.

A T1 episode is given as (correct seen-key answers, confabulated unseen-key answers) out of
SEEN and UNSEEN queries; a T2 episode as (applied on triggers, applied on non-triggers) out of
TRIG and NON. Score A comes from the control's episodes, score B from the system's.
"""

from __future__ import annotations

import json

from urd.harness.fold import fold

SEEN, UNSEEN, TRIG, NON = 4, 2, 4, 4
VALUE, WRONG, MARKER = "ABCDEFGHJKMN", "ZZZZZZZZZZZZ", "~kv"


def t1_records(episode: int, correct: int, confab: int, meta: dict) -> list[dict]:
    recs = []
    for i in range(SEEN):
        recs.append({"task": "t1", "episode": episode, "query_id": f"t1-e{episode}-q{i}", "kind": "hot" if i % 2 else "cold",
                     "expected": VALUE, "response": VALUE if i < correct else WRONG, **meta})
    for i in range(UNSEEN):
        recs.append({"task": "t1", "episode": episode, "query_id": f"t1-e{episode}-u{i}", "kind": "unseen",
                     "expected": "NONE", "response": WRONG if i < confab else "NONE", **meta})
    return recs


def t2_records(episode: int, on_trigger: int, on_non: int, meta: dict) -> list[dict]:
    recs = []
    for kind, n, hits in (("trigger", TRIG, on_trigger), ("non_trigger", NON, on_non)):
        for i in range(n):
            recs.append({"task": "t2", "episode": episode, "query_id": f"t2-e{episode}-{kind}{i}", "kind": kind,
                         "expected": "", "marker": MARKER,
                         "response": f"Logged: x. {MARKER}" if i < hits else "Logged: x.", **meta})
    return recs


def _meta(budget, fiche, declared, ooc, cap=1000):
    return {"budget_bytes": budget, "fiche_bytes": fiche, "declared_tokens": declared, "metered_tokens": declared,
            "token_cap": cap, "out_of_contract": ooc}


def make_summary(scale: str, control: dict, systems: dict, budgets: dict | None = None, commit: str = "c0ffee") -> dict:
    """control: {task: [per-episode tuple]}; systems: {name: {"ooc": bool, (task, split): [tuples]}}."""
    budgets = budgets or {"over": 120, "sanity": 960}
    make = {"t1": t1_records, "t2": t2_records}
    responses = {("control", t, None): [r for e, x in enumerate(eps) for r in make[t](e, *x, {})]
                 for t, eps in control.items()}
    for name, spec in systems.items():
        ooc = spec.get("ooc", False)
        for key, eps in spec.items():
            if key == "ooc":
                continue
            task, split = key
            meta = _meta(budgets[split], min(budgets[split], 100), 50 * (3 if ooc else 1), ooc)
            responses[(name, task, split)] = [r for e, x in enumerate(eps) for r in make[task](e, *x, meta)]
    return {"scale": scale, **fold(responses),
            "provenance": {"commit": commit, "checkpoint": f"{scale}.pth", "checkpoint_sha256": "ab" * 32}}


def write(path, obj) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, sort_keys=True))
    return str(path)


def published_like(scale: str = "0.1b") -> dict:
    """Three systems with different shapes, 6 episodes each: a strong T1 system (retrieval), a
    system with mixed signs on T2 (gzip_tail), an out-of-contract zero (replay_banc)."""
    ctl = {"t1": [(2, 1), (4, 2), (3, 1), (1, 2), (2, 2), (4, 1)],
           "t2": [(4, 1), (3, 0), (4, 2), (2, 1), (4, 0), (3, 1)]}
    return make_summary(scale, ctl, {
        "retrieval": {("t1", "over"): [(1, 0), (2, 0), (1, 0), (0, 0), (1, 1), (2, 0)],
                      ("t1", "sanity"): [(3, 0), (4, 0), (4, 0), (2, 0), (3, 0), (4, 0)],
                      ("t2", "over"): [(0, 0)] * 6,
                      ("t2", "sanity"): [(4, 1), (3, 0), (4, 2), (2, 1), (4, 0), (3, 1)]},
        "gzip_tail": {("t1", "over"): [(0, 1), (1, 2), (0, 1), (0, 2), (0, 2), (1, 1)],
                      ("t1", "sanity"): [(2, 1), (3, 2), (2, 1), (1, 2), (2, 2), (3, 1)],
                      ("t2", "over"): [(2, 1), (1, 2), (2, 0), (1, 1), (2, 1), (0, 1)],
                      ("t2", "sanity"): [(4, 1), (3, 0), (4, 2), (2, 1), (4, 0), (3, 1)]},
        "replay_banc": {"ooc": True,
                        ("t1", "over"): [(0, 0)] * 6, ("t1", "sanity"): [(0, 0)] * 6,
                        ("t2", "over"): [(0, 0)] * 6, ("t2", "sanity"): [(0, 0)] * 6},
        "vanilla": {("t1", "over"): [(0, 0)] * 6, ("t1", "sanity"): [(0, 0)] * 6,
                    ("t2", "over"): [(0, 0)] * 6, ("t2", "sanity"): [(0, 0)] * 6},
    })
