"""Run one cell of the benchmark: the in-session control, or one system on one split.

Every query produces one record (the responses.jsonl line): episode, query id, kind, prompt
digest, raw response, parsed answer, expected answer, verdict, and for session B the weighed
consolidation of its episode. Progress goes to stderr, one line per episode.
"""

from __future__ import annotations

import hashlib
import sys
import time

from ..backbone.tokenizer import count_tokens
from . import contract
from .context import ContextAnswerer, Decode
from .scoring import judge_t1, judge_t2


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge(task: str, episode: dict, query: dict, reply: str) -> dict:
    if task == "t1":
        return judge_t1(query, reply)
    return judge_t2(query, reply, episode["rule"]["marker"])


def _record(task, episode, query, prompt, reply, extra) -> dict:
    expected = query["expected"]
    rec = {
        "task": task,
        "episode": episode["episode"],
        "query_id": query["id"],
        "kind": query["kind"],
        "prompt_sha256": _digest(prompt),
        "response": reply,
        "expected": expected,
        **judge(task, episode, query, reply),
        **extra,
    }
    if task == "t2":
        rec["marker"] = episode["rule"]["marker"]
    return rec


def _progress(label: str, i: int, n: int, nq: int, started: float) -> None:
    print(f"[{label}] episode {i + 1}/{n} done ({nq} queries), {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)


def run_control(backbone, task: str, episodes: list[dict], decode: Decode, label="control") -> list[dict]:
    """Score A: the transcript and each query in one context, no boundary."""
    answerer = ContextAnswerer(backbone)
    out, started = [], time.monotonic()
    for i, ep in enumerate(episodes):
        context = ep["transcript"]
        answerer.set_context(context)
        for q in ep["queries"]:
            reply = answerer.ask(q["prompt"], decode)
            out.append(_record(task, ep, q, context + q["prompt"], reply, {"system": "control", "split": None}))
        _progress(label, i, len(episodes), len(ep["queries"]), started)
    return out


def run_system(backbone, system, task: str, episodes: list[dict], split: str, budget: int | None,
               factor: int, decode: Decode, label: str | None = None) -> list[dict]:
    """Score B: consolidate in session A, cross the boundary with the fiche alone, answer in B."""
    label = label or f"{system.name}/{task}/{split}"
    out, started = [], time.monotonic()
    system.decode = decode
    for i, ep in enumerate(episodes):
        transcript = ep["transcript"]
        system.declared_tokens = 0
        before = backbone.tokens_processed
        fiche = system.consolidate(transcript, budget)
        metered = backbone.tokens_processed - before
        weighed = contract.check(
            system.name, ep["episode"], fiche, budget, system.declared_tokens, metered,
            count_tokens(transcript), factor, bool(system.out_of_contract),
        )
        fiche = bytes(fiche)
        # The boundary: from here on only `fiche` (and the task header) reach the system.
        extra = {
            "system": system.name,
            "split": split,
            "fiche_sha256": hashlib.sha256(fiche).hexdigest(),
            **weighed.as_record(),
        }
        for q in ep["queries"]:
            reply = system.answer(fiche, q["prompt"], ep["header"])
            seen = f"{ep['header']}\n[fiche {extra['fiche_sha256']}]\n{q['prompt']}"
            out.append(_record(task, ep, q, seen, reply, extra))
        _progress(label, i, len(episodes), len(ep["queries"]), started)
    return out
