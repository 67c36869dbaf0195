"""Judging raw responses, and folding verdicts into episode scores.

Judging is a pure function of (query record, raw response), so every figure can be re-derived
offline from responses.jsonl.

T1: the parsed answer is the first 12-character base32 token of the reply's first line; an
abstention is the word NONE with no such token. On a seen key the verdict is correct / wrong /
abstained; on an unseen key abstained / confabulated (a value-shaped answer) / no_answer.
T2: applied when the episode's marker stands as a token in the reply's first line.
"""

from __future__ import annotations

import functools
import re

from ..data import t1 as t1task
from ..data import t2 as t2task

_ABSTAIN = re.compile(r"\bNONE\b")


@functools.cache
def _value(length: int) -> re.Pattern:
    return re.compile(r"(?<![0-9A-Z])[" + re.escape(t1task.ALPHABET) + r"]{" + str(length) + r"}(?![0-9A-Z])")


def first_line(reply: str) -> str:
    stripped = reply.strip()
    return stripped.split("\n", 1)[0] if stripped else ""


def judge_t1(query: dict, reply: str, code_length: int = 12) -> dict:
    """code_length: the published task's 12; the learned backbone's curriculum judges its
    shorter codes with the same rule."""
    line = first_line(reply)
    m = _value(code_length).search(line)
    parsed = m.group(0) if m else ("NONE" if _ABSTAIN.search(line) else None)
    if query["kind"] == "unseen":
        verdict = "confabulated" if m else ("abstained" if parsed == "NONE" else "no_answer")
    elif parsed == query["expected"]:
        verdict = "correct"
    else:
        verdict = "abstained" if parsed == "NONE" else "wrong"
    return {"parsed": parsed, "verdict": verdict}


def judge_t2(query: dict, reply: str, marker: str) -> dict:
    hit = t2task.applied(reply, marker)
    return {"parsed": first_line(reply), "verdict": "applied" if hit else "not_applied"}


def episode_scores(task: str, records: list[dict]) -> dict:
    """Score and side metrics of one episode from its judged records."""
    if task == "t1":
        seen = [r for r in records if r["kind"] != "unseen"]
        unseen = [r for r in records if r["kind"] == "unseen"]
        correct = sum(r["verdict"] == "correct" for r in seen)
        return {
            "score": correct / len(seen) if seen else None,  # no seen-key query: no recall to score
            "correct": correct,
            "seen": len(seen),
            "cold": sum(r["kind"] == "cold" for r in seen),
            "cold_correct": sum(r["verdict"] == "correct" for r in seen if r["kind"] == "cold"),
            "confabulation": (sum(r["verdict"] == "confabulated" for r in unseen) / len(unseen)) if unseen else None,
        }
    trig = [r for r in records if r["kind"] == "trigger"]
    non = [r for r in records if r["kind"] == "non_trigger"]
    # a class with no query has no rate, and then there is no discrimination to score
    rt = sum(r["verdict"] == "applied" for r in trig) / len(trig) if trig else None
    rn = sum(r["verdict"] == "applied" for r in non) / len(non) if non else None
    return {"score": None if rt is None or rn is None else rt - rn, "rate_trigger": rt, "rate_non_trigger": rn}
