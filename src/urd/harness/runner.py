"""The three steps of a benchmark cell, each its own job in the workflow.

1. consolidate_cell (session A): each episode's transcript -> a fiche, weighed by the contract on
   its real bytes; the fiche records are the only thing session B receives.
2. answer_cell / answer_control (session B / the in-session control): raw replies, every query
   of an episode decoded in one batch from the context state. The answering side reads the task
   header, the fiche and the query prompts, nothing else.
3. judge_cell: raw replies joined with the expected answers -> the responses.jsonl records
   (episode, query id, kind, prompt digest, raw response, parsed, expected, verdict, and the
   weighed consolidation of the episode).

run_control and run_system chain them in one process, for the controls and the tests; the
workflow runs each step in its own process, so nothing but the fiche file crosses.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import time

from ..backbone.tokenizer import count_tokens
from ..core.errors import InputError
from ..session import contract
from ..session.context import Decode, answer_groups, batched
from ..session.handle import ModelHandle
from . import fiches
from .scoring import judge_t1, judge_t2


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _progress(label: str, i: int, n: int, what: str, started: float) -> None:
    print(f"[{label}] episode {i + 1}/{n} {what}, {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)


def as_handle(backbone) -> ModelHandle:
    return backbone if isinstance(backbone, ModelHandle) else ModelHandle(backbone)


# --- 1. session A ------------------------------------------------------------------------------
def takes(method, name: str) -> bool:
    """Whether a system's method accepts the keyword `name` (the rung-2 `prior`): a system
    written for rung 1 is called as it was, and measured as it is."""
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def consolidate_cell(system, task: str, sessions: list[dict], split: str, budget: int | None,
                     factor: int, label: str | None = None, priors: dict[int, bytes] | None = None) -> list[dict]:
    """One fiche record per episode. The handle the system was built with meters its tokens.

    `priors` (rung-2 chains): the fiche each episode's previous boundary left, passed as
    `prior=` to a consolidate() (or `priors=` to a consolidate_batch()) that accepts it; a
    system that does not is measured as it is. The token cap stays factor x this session's
    transcript, whatever the system reads of the prior."""
    from ..systems.base import MemorySystem

    label = label or f"{system.name}/{task}/{split}"
    handle, transcripts, where = _ready(system, sessions)
    started = time.monotonic()
    system.consolidation_factor = factor  # the cap it is held to, for a system that adapts to it
    prior_of = [(priors or {}).get(ep["episode"]) for ep in sessions]
    results = []  # (fiche, declared, metered) per episode
    if type(system).consolidate_batch is not MemorySystem.consolidate_batch:
        handle.scoped_tokens()
        before = handle.tokens_processed
        try:
            if priors is not None and takes(system.consolidate_batch, "priors"):
                batch = system.consolidate_batch(transcripts, budget, priors=prior_of)
            else:
                batch = system.consolidate_batch(transcripts, budget)
        except contract.BudgetViolation as exc:
            raise contract.BudgetViolation(f"{where[0].rsplit(',', 1)[0]}: {exc}") from None
        if len(batch) != len(sessions):
            raise InputError(f"system {system.name}", "consolidate_batch", f"{len(sessions)} (fiche, tokens) pairs", len(batch))
        scoped = {i: n for i, n in handle.scoped_tokens().items() if i in range(len(sessions))}
        # tokens no episode's scope took count against every episode: nothing hides there
        loose = handle.tokens_processed - before - sum(scoped.values())
        results = [(fiche, declared, scoped.get(i, 0) + loose) for i, (fiche, declared) in enumerate(batch)]
        _progress(label, len(sessions) - 1, len(sessions), "consolidated (one batch)", started)
    else:
        for i, transcript in enumerate(transcripts):
            system.declared_tokens = 0
            before = handle.tokens_processed
            try:
                if priors is not None and takes(system.consolidate, "prior"):
                    fiche = system.consolidate(transcript, budget, prior=prior_of[i])
                else:
                    fiche = system.consolidate(transcript, budget)
            except contract.BudgetViolation as exc:
                raise contract.BudgetViolation(f"{where[i]}: {exc}") from None
            results.append((fiche, system.declared_tokens, handle.tokens_processed - before))
            _progress(label, i, len(sessions), "consolidated", started)
    return _weigh(system, task, sessions, split, budget, factor, where, results)


def _ready(system, sessions: list[dict]) -> tuple[ModelHandle, list[str], list[str]]:
    """The system's metered handle with every transcript cached as its own state (from the
    prefill job's file or on first use), the transcripts, and how each episode is named."""
    handle = system.backbone
    if not isinstance(handle, ModelHandle):
        raise TypeError("a system must be built on a ModelHandle (MemorySystem.__init__ does it)")
    transcripts = [ep["transcript"] for ep in sessions]
    for t in transcripts:
        handle.cache_prefix(handle.tokenizer.encode(t))
    return handle, transcripts, [contract.naming(system.name, ep["episode"], system.plugin) for ep in sessions]


def _weigh(system, task, sessions, split, budget, factor, where, results) -> list[dict]:
    """The contract's check of each episode's (fiche, declared, metered), as fiche records."""
    out = []
    for ep, w, (fiche, declared, metered) in zip(sessions, where, results):
        fiche = contract.exact_bytes(w, fiche)
        weighed = contract.check(system.name, ep["episode"], fiche, budget, declared, metered,
                                 count_tokens(ep["transcript"]), factor, bool(system.out_of_contract),
                                 system.plugin)
        out.append(fiches.record(system.name, task, split, ep["episode"], fiche, weighed))
    return out


def consolidate_points(system, task: str, sessions: list[dict], points: list[tuple[str, int | None, int]],
                       label: str | None = None) -> list[list[dict] | contract.BudgetViolation]:
    """consolidate_cell at several (split, budget, cap factor) points (rung 2's sweep): each
    point's fiche records, or the BudgetViolation that disqualifies it. A system with a
    consolidate_sweep() writes every point and episode in one batch, its model work scoped
    under (point, episode) so each is metered as if it ran alone; any other system, or one
    whose sweep raises a violation (which point broke the contract must be known), is run
    point by point."""
    label = label or f"{system.name}/{task}/sweep"
    sweep = getattr(system, "consolidate_sweep", None)
    if sweep is not None:
        handle, transcripts, where = _ready(system, sessions)
        started = time.monotonic()
        handle.scoped_tokens()
        before = handle.tokens_processed
        try:
            batch = sweep(transcripts, [(budget, factor) for _, budget, factor in points])
        except contract.BudgetViolation:
            sweep = None
        else:
            if len(batch) != len(points) or any(len(b) != len(sessions) for b in batch):
                raise InputError(f"system {system.name}", "consolidate_sweep",
                                 f"{len(points)} lists of {len(sessions)} (fiche, tokens) pairs",
                                 [len(b) for b in batch])
            keys = {(p, i) for p in range(len(points)) for i in range(len(sessions))}
            scoped = {k: n for k, n in handle.scoped_tokens().items() if k in keys}
            loose = handle.tokens_processed - before - sum(scoped.values())  # against every row
            _progress(label, len(sessions) - 1, len(sessions), f"consolidated at {len(points)} points (one batch)",
                      started)
    if sweep is None:
        out = []
        for split, budget, factor in points:
            try:
                out.append(consolidate_cell(system, task, sessions, split, budget, factor))
            except contract.BudgetViolation as exc:
                out.append(exc)
        return out
    out = []
    for p, ((split, budget, factor), rows) in enumerate(zip(points, batch)):
        results = [(fiche, declared, scoped.get((p, i), 0) + loose) for i, (fiche, declared) in enumerate(rows)]
        try:
            out.append(_weigh(system, task, sessions, split, budget, factor, where, results))
        except contract.BudgetViolation as exc:
            out.append(exc)
    return out


# --- 2. session B and the control ----------------------------------------------------------
def answer_cell(system, sessions: list[dict], fiche_records: list[tuple[dict, bytes]], decode: Decode,
                label: str | None = None) -> list[dict]:
    """Raw replies of a system that starts each episode from its fiche alone. A system with a
    context() has every query of the cell decoded in one batch; one with its own answer() is
    asked episode by episode."""
    return answer_cells(system, [(sessions, fiche_records)], decode, label)[0]


def answer_cells(system, cells: list[tuple[list[dict], list[tuple[dict, bytes]]]], decode: Decode,
                 label: str | None = None) -> list[list[dict]]:
    """answer_cell for several cells of one system at once (rung 2: the points of a sweep, the
    sessions of a chain), every query of every cell decoded together (answer_groups); the raw replies of
    each cell, in order."""
    label = label or system.name
    system.decode = decode
    flat = []  # (cell index, episode, fiche record, fiche)
    for n, (sessions, fiche_records) in enumerate(cells):
        by_episode = {rec["episode"]: (rec, fiche) for rec, fiche in fiche_records}
        for ep in sessions:
            if ep["episode"] not in by_episode:
                raise InputError("fiches", f"episode {ep['episode']}", "a fiche for every answered episode", "none")
            flat.append((n, ep, *by_episode[ep["episode"]]))
    started = time.monotonic()
    prompts = [[q["prompt"] for q in ep["queries"]] for _, ep, _, _ in flat]
    contexts = [system.context(fiche, ep["header"]) for _, ep, _, fiche in flat]
    if all(c is not None for c in contexts):
        replies = answer_groups(system.backbone, [(c.text, c.state) for c in contexts], prompts, decode)
        _progress(label, len(flat) - 1, len(flat), f"answered ({batched(prompts)})", started)
    else:
        replies = []
        for i, ((_, ep, _, fiche), ps) in enumerate(zip(flat, prompts)):
            replies.append(system.answer_all(fiche, ps, ep["header"]))
            _progress(label, i, len(flat), f"answered ({len(ps)} queries)", started)
    out: list[list[dict]] = [[] for _ in cells]
    for (n, ep, rec, _), ps, rs in zip(flat, prompts, replies):
        if len(rs) != len(ps) or not all(isinstance(r, str) for r in rs):
            raise InputError(f"system {system.name}", "answer_all", f"{len(ps)} str replies", rs)
        for q, reply in zip(ep["queries"], rs):
            seen = f"{ep['header']}\n[fiche {rec['fiche_sha256']}]\n{q['prompt']}"
            out[n].append({"episode": ep["episode"], "query_id": q["id"], "prompt_sha256": _digest(seen),
                           "response": reply})
    return out


def answer_control(backbone, sessions_a: list[dict], sessions_b: list[dict], decode: Decode,
                   label: str = "control") -> list[dict]:
    """Score A's raw replies: the transcript and the queries in one context, no boundary; every
    query of the cell decoded together (answer_groups)."""
    handle = as_handle(backbone)
    transcripts = {ep["episode"]: ep["transcript"] for ep in sessions_a}
    for t in transcripts.values():
        handle.cache_prefix(handle.tokenizer.encode(t))
    started = time.monotonic()
    contexts = [(transcripts[ep["episode"]], None) for ep in sessions_b]
    prompts = [[q["prompt"] for q in ep["queries"]] for ep in sessions_b]
    replies = answer_groups(handle, contexts, prompts, decode)
    out = []
    for ep, rs in zip(sessions_b, replies):
        context = transcripts[ep["episode"]]
        for q, reply in zip(ep["queries"], rs):
            out.append({"episode": ep["episode"], "query_id": q["id"], "prompt_sha256": _digest(context + q["prompt"]),
                        "response": reply})
    _progress(label, len(sessions_b) - 1, len(sessions_b), f"answered ({batched(prompts)})", started)
    return out


# --- 3. judging --------------------------------------------------------------------------------
def judge(task: str, episode: dict, query: dict, reply: str) -> dict:
    if task == "t1":
        return judge_t1(query, reply)
    return judge_t2(query, reply, episode["rule"]["marker"])


def joined(episodes: list[dict], raw: list[dict], source: str = "raw replies") -> list[tuple[dict, dict, dict]]:
    """(episode, query, its raw reply) for every query of `episodes`, in order. A missing,
    duplicated or unknown reply is an error naming `source` and the query."""
    replies: dict[str, dict] = {}
    for r in raw:
        if r["query_id"] in replies:
            raise InputError(source, f"query {r['query_id']}", "one reply per query", "a duplicate")
        replies[r["query_id"]] = r
    wanted = [(ep, q) for ep in episodes for q in ep["queries"]]
    missing = [q["id"] for _, q in wanted if q["id"] not in replies]
    if missing:
        raise InputError(source, "query_id", f"a reply to each of the {len(wanted)} evaluated queries",
                         f"{len(missing)} missing (first: {missing[0]})")
    extra = sorted(set(replies) - {q["id"] for _, q in wanted})
    if extra:
        raise InputError(source, "query_id", "only the evaluated queries", f"{len(extra)} others (first: {extra[0]})")
    return [(ep, q, replies[q["id"]]) for ep, q in wanted]


def judge_cell(task: str, episodes: list[dict], raw: list[dict], fiche_records: list[dict] | None = None,
               system: str = "control", split: str | None = None, source: str = "raw replies") -> list[dict]:
    """responses.jsonl records: every query of `episodes` exactly once, judged against the data.
    A missing, duplicated or unknown reply is an error naming `source` and the query."""
    wanted = joined(episodes, raw, source)
    weighed = {}
    if fiche_records is not None:
        weighed = {rec["episode"]: rec for rec in fiche_records}
    out = []
    for ep, q, r in wanted:
        if r["episode"] != ep["episode"]:
            raise InputError(source, f"query {q['id']}: episode", ep["episode"], r["episode"])
        rec = {"task": task, "episode": ep["episode"], "query_id": q["id"], "kind": q["kind"],
               "prompt_sha256": r["prompt_sha256"], "response": r["response"], "expected": q["expected"],
               **judge(task, ep, q, r["response"]), "system": system, "split": split}
        if "sandbox" in r:  # how the replies and the fiche were made (urd.workflow.sandbox)
            rec["sandbox_answer"] = r["sandbox"]
        if fiche_records is not None:
            if ep["episode"] not in weighed:
                raise InputError("fiches", f"episode {ep['episode']}", "a fiche record", "none")
            w = weighed[ep["episode"]]
            rec.update({k: w[k] for k in fiches.FIELDS if k not in ("fiche_b64", "system", "task", "split", "episode")})
            if "sandbox" in w:
                rec["sandbox_consolidate"] = w["sandbox"]
        if task == "t2":
            rec["marker"] = ep["rule"]["marker"]
        out.append(rec)
    return out


# --- in one process (controls, tests) ----------------------------------------------------------
def run_control(backbone, task: str, episodes: list[dict], decode: Decode, label="control") -> list[dict]:
    from ..data import views

    raw = answer_control(backbone, [views.session_a(e) for e in episodes],
                         [views.session_b(e) for e in episodes], decode, label)
    return judge_cell(task, episodes, raw)


def run_system(backbone, system, task: str, episodes: list[dict], split: str, budget: int | None,
               factor: int, decode: Decode, label: str | None = None) -> list[dict]:
    """All three steps in this process (the workflow runs them as separate jobs)."""
    from ..data import views

    label = label or f"{system.name}/{task}/{split}"
    recs = consolidate_cell(system, task, [views.session_a(e) for e in episodes], split, budget, factor, label)
    crossing = [(r, fiches.read_one(r)) for r in recs]
    raw = answer_cell(system, [views.session_b(e) for e in episodes], crossing, decode, label)
    return judge_cell(task, episodes, raw, recs, system.name, split)
