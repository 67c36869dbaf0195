"""The steps of a rung-3 cell. Session A is rung 1's, unchanged (urd.harness.runner.consolidate_cell:
the system on a metered handle, its fiche weighed by the contract); session B hands each episode's
context (what the system's context() builds from the fiche and the header) to the model of the
cell, here a reader; the control hands it the whole transcript. The workflow runs each step in its
own process (rules/urd3.smk), so nothing but the fiche file crosses.
"""

from __future__ import annotations

import hashlib
import sys
import time

from ..core.errors import InputError, UrdError
from ..harness.runner import consolidate_cell
from ..session.handle import ModelHandle
from . import isolated


def no_model(reader: str):
    """The handle of a system on a reader that runs no model: a system that asks it for a model
    fails saying so (the DAG gives such a system no cell: urd.rung3.plan)."""

    def load():
        raise UrdError(f"the {reader} reader runs no model: a system that consolidates with the model "
                       "has no cell on it")

    return ModelHandle(loader=load)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def consolidate(system, family: str, sessions: list[dict], split: str, budget: int | None, factor: int) -> list[dict]:
    return consolidate_cell(system, family, sessions, split, budget, factor, label=f"{system.name}/{family}/{split}")


def answer(build, reader, sessions: list[dict], fiche_records: list[tuple[dict, bytes]]) -> list[dict]:
    """Session B: each episode's context from its fiche alone, every prompt answered by the reader.

    `build()` makes the system. Each episode's context is built in a process of its own, forked
    from this one, by a system built there afresh: what a system keeps while it reads one
    episode's fiche (on the instance, its class or a module) dies with that process, so no
    episode's context is made knowing another's fiche (pairs of episodes teach opposite sides:
    one fiche would tell its pair's). The context comes back as plain data (text, state arrays)."""
    started = time.monotonic()
    by_episode = {rec["episode"]: (rec, fiche) for rec, fiche in fiche_records}
    contexts, prompts, recs, name = [], [], [], None
    for ep in sessions:
        if ep["episode"] not in by_episode:
            raise InputError("fiches", f"episode {ep['episode']}", "a fiche for every answered episode", "none")
        rec, fiche = by_episode[ep["episode"]]
        name, ctx = isolated.context(build, fiche, ep["header"], episode=ep["episode"])
        if ctx is None:
            raise UrdError(f"system {name!r} answers through the model (answer(), no context()): "
                           f"the {reader.name} reader takes a context")
        if ctx.state is not None and not reader.reads_states:
            raise UrdError(f"system {name!r}: its session B starts from a model state, which the "
                           f"{reader.name} reader cannot read")
        contexts.append(ctx)
        prompts.append([q["prompt"] for q in ep["queries"]])
        recs.append(rec)
    replies = reader.replies(contexts, prompts)
    out = []
    for ep, rec, ps, rs in zip(sessions, recs, prompts, replies, strict=True):
        if len(rs) != len(ps) or not all(isinstance(r, str) for r in rs):
            raise InputError(f"reader {reader.name}", f"episode {ep['episode']}", f"{len(ps)} str replies", rs)
        for q, reply in zip(ep["queries"], rs):
            seen = f"{ep['header']}\n[fiche {rec['fiche_sha256']}]\n{q['prompt']}"
            out.append({"episode": ep["episode"], "query_id": q["id"], "prompt_sha256": _digest(seen),
                        "response": reply})
    print(f"[{name}] answered {len(out)} prompts of {len(sessions)} episodes, "
          f"{time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    return out


def control(reader, sessions_a: list[dict], sessions_b: list[dict]) -> list[dict]:
    """Score A: the whole transcript in context, no boundary."""
    from ..systems.base import Context

    transcripts = {ep["episode"]: ep["transcript"] for ep in sessions_a}
    contexts = [Context(transcripts[ep["episode"]]) for ep in sessions_b]
    prompts = [[q["prompt"] for q in ep["queries"]] for ep in sessions_b]
    out = []
    for ep, context, rs in zip(sessions_b, contexts, reader.replies(contexts, prompts)):
        for q, reply in zip(ep["queries"], rs):
            out.append({"episode": ep["episode"], "query_id": q["id"], "prompt_sha256": _digest(context.text + q["prompt"]),
                        "response": reply})
    return out
