"""What a run will cost, before any call: from a measured usage profile when one exists
for the case and model, else from the run's call graph.

The call graph. The scripted arm runs the same suite offline and records every request it
is asked (purpose, instructions, data, output budget): that is the list of calls a live run
makes when the model answers as the table does. Each is priced at the live route's list
price: input tokens are its bytes over the stated ``estimate.bytes_per_token`` (plus the
message framing), instructions at cache rates only where they reach
``estimate.min_cacheable_tokens`` (the first such call of a purpose writes, later ones read),
output at the stated typical length of the purpose (``estimate.output_tokens``, at most its
``max_tokens``). A model that disagrees with the table makes other calls; the estimate says
what it assumes.

The bound (kept for the ceiling and for a reader who wants the worst case). Output tokens per call are at most the purpose's ``max_tokens`` (the API
enforces it; thinking counts within it). Input tokens are at most the request's UTF-8
bytes plus the message framing, taking every claim at the store's ``max_claim_chars``
(a restatement at twice that) and every note at its real size. Input is priced at the
dearer of the input and cache-write rates. Call counts follow the store's enforced caps:
``max_claims_per_note`` claims a note, ``max_pairs_per_claim`` partners a claim, the
gate's probes per pair, at most one retirement per claim of an earlier note, and per
retirement one re-anchor probe over ``max_reanchor_candidates`` claims, each with a
check and ``max_conflict_checks`` contradiction probes. It reads high, by design.

Pure: reads only the shipped notes, pair sets and the given profile; writes nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UrdError
from ..data.agentmem.cases import case as case_named
from ..data.agentmem.cases import load_note
from ..data.agentmem.pair_sets import load_set_rows
from ..llm import SCRIPTED_MODEL, Request, Routes, Usage
from ..llm import purposes as P
from ..llm.client import BATCH_PRICE
from ..llm.prices import PriceBook
from ..llm.request import FRAMING_TOKENS  # one framing allowance for estimate, bound and ceiling
from ..stores.reference import prompts
from ..stores.reference.gates import BEFORE_1_187, CHANGES_ONLY, PRODUCTION
from ..stores.settings import Settings

PROBE_CALLS_PER_PAIR = {PRODUCTION: 3, CHANGES_ONLY: 2, BEFORE_1_187: 3}
PROFILE_FILE = "usage_profile.json"


@dataclass(frozen=True)
class Estimate:
    suite: str
    model: str
    source: str  # "bound", "profile", "call graph", "free" or "not priced"
    usd: float | None  # None: not priced
    per_variant_usd: Mapping[str, float] = field(default_factory=dict)
    calls: int | None = None
    note: str = ""

    @property
    def cents(self) -> int:
        # Rounded up: a planned-spend line must not read under the estimate. Not priced: 0,
        # and the job's message says why.
        return 0 if self.usd is None else math.ceil(round(self.usd * 100, 6))

    def line(self) -> str:
        if self.usd is None:
            return f"{self.suite} on {self.model}: not priced ({self.note})"
        calls = "" if self.calls is None else f", {'at most ' if self.source == 'bound' else ''}{self.calls} calls"
        return f"{self.suite} on {self.model}: estimate US${self.usd:.2f} ({self.source}{calls}; {self.note})"

    def as_dict(self) -> dict:
        return {
            "source": self.source,
            "usd": None if self.usd is None else round(self.usd, 6),
            "per_variant_usd": {k: round(v, 6) for k, v in sorted(self.per_variant_usd.items())},
            "calls": self.calls,
            "note": self.note,
        }


def _call_usd(prices: PriceBook, routes: Routes, request: Request) -> float:
    price = prices.price(routes.model_for(request.purpose))
    return price.worst_case(request.input_token_bound(), request.max_tokens)


def _bound_run(settings: Settings, routes: Routes, case_name: str, variant: str, gate: str) -> tuple[float, int]:
    lim, mt, prices = settings.limits, settings.max_tokens, settings.prices
    notes = [load_note(n) for n in case_named(case_name).variants[variant]]
    claim = "x" * lim.max_claim_chars
    restatement = "x" * (2 * lim.max_claim_chars)
    passage = max((n.text for n in notes), key=len)
    usd, calls = 0.0, 0
    for note in notes:  # extraction, and its one re-ask
        req = prompts.extraction(note.text, note.date.isoformat(), max_claims=lim.max_claims_per_note, max_tokens=mt[P.EXTRACT], replica="")
        usd += 2 * _call_usd(prices, routes, req)
        calls += 2
    pair_requests = [
        prompts.update(claim, claim, confirm=False, max_tokens=mt[P.UPDATE], replica=""),
        prompts.update(claim, claim, confirm=True, max_tokens=mt[P.UPDATE_CONFIRM], replica=""),
        prompts.contradiction(claim, claim, max_tokens=mt[P.CONTRADICTION], replica=""),
    ]
    per_pair = sorted((_call_usd(prices, routes, r) for r in pair_requests), reverse=True)[: PROBE_CALLS_PER_PAIR[gate]]
    pairs = sum(
        lim.max_claims_per_note * min(lim.max_pairs_per_claim, lim.max_claims_per_note * j) for j in range(len(notes))
    )
    usd += pairs * sum(per_pair)
    calls += pairs * len(per_pair)
    retirements = min(pairs, lim.max_claims_per_note * (len(notes) - 1))
    m, c = lim.max_reanchor_candidates, lim.max_conflict_checks
    probe = prompts.reanchor(claim, passage, "2026-01-01", [claim] * m, max_tokens=mt[P.REANCHOR], replica="")
    check = prompts.reanchor_check(claim, claim, restatement, passage, "2026-01-01", max_tokens=mt[P.REANCHOR_CHECK], replica="")
    conflict = prompts.contradiction(claim, restatement, max_tokens=mt[P.CONTRADICTION], replica="")
    per_retirement = _call_usd(prices, routes, probe) + m * (
        _call_usd(prices, routes, check) + c * _call_usd(prices, routes, conflict)
    )
    usd += retirements * per_retirement
    calls += retirements * (1 + m * (1 + c))
    return usd, calls


#: (model, request) -> the input tokens it bills: the Messages API's counter, when a key is present
TokenCounter = Callable[[str, Request], int]


def call_graph_usd(settings: Settings, routes: Routes, requests: list[Request], count: TokenCounter | None = None) -> float:
    """The calls priced at the live routes' list prices (see the module docstring). With
    ``count``, each request's input tokens are counted, not derived from its bytes (the
    instructions' share of them follows their share of the bytes)."""
    est = settings.raw["estimate"]
    per_byte = 1 / float(est["bytes_per_token"])
    cached: set[tuple[str, str]] = set()
    total = 0.0
    for r in requests:
        model = routes.model_for(r.purpose)
        price = settings.prices.price(model)
        if count is None:
            system = math.ceil(len(r.system.encode()) * per_byte)
            user = math.ceil(len(r.user.encode()) * per_byte) + FRAMING_TOKENS
        else:
            counted = count(model, r)
            system = round(counted * len(r.system.encode()) / max(1, r.size_bytes()))
            user = counted - system
        if settings.raw["llm"]["prompt_cache"] and system >= est["min_cacheable_tokens"]:
            rate = price.cache_read if (model, r.system) in cached else price.cache_write
            cached.add((model, r.system))
        else:
            rate = price.input
        out = min(est["output_tokens"].get(r.purpose, r.max_tokens), r.max_tokens)
        total += (system * rate + user * price.input + out * price.output) / 1_000_000
    return total


def _graph_note(settings: Settings, counted: bool = False) -> str:
    est = settings.raw["estimate"]
    source = "counted by messages.count_tokens" if counted else f"at {est['bytes_per_token']:g} bytes a token"
    return (f"the calls the scripted arm makes, at list prices: input {source}, output at the typical "
            f"lengths stated {est['stated']}")


def _profile_usd(prices: PriceBook, routes: Routes, by_purpose: Mapping[str, Mapping]) -> float:
    total = 0.0
    for purpose, u in by_purpose.items():
        usage = Usage(u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cache_write_tokens", 0), u.get("cache_read_tokens", 0))
        total += prices.cost(routes.model_for(purpose), usage)
    return total


def load_profile(settings: Settings) -> dict:
    path = Path(settings.calibration_dir) / PROFILE_FILE
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


#: A run's call graph: every request it makes, recorded on the scripted arm (the suites build it).
Graph = Callable[..., list[Request]]


class NotPriced(UrdError):
    """A run whose calls cannot be known offline (a store the scripted arm cannot run)."""


def not_priced(suite: str, model: str, why: str) -> Estimate:
    return Estimate(suite, model, "not priced", None, {}, None, why)


def trip_vs_move(
    settings: Settings, routes: Routes, case_name: str, *, runs: Mapping[str, int], graph: Graph,
    profile: Mapping | None = None, count: TokenCounter | None = None, suite: str | None = None,
) -> Estimate:
    """``graph(variant)``: the requests one run of that variant makes on the scripted arm."""
    suite = suite or f"trip-vs-move {case_name}"
    if all(m == SCRIPTED_MODEL for m in routes.by_purpose.values()):
        return Estimate(suite, routes.model, "free", 0.0, {v: 0.0 for v in runs}, None, "the scripted arm makes no paid call")
    measured = (profile or {}).get("trip-vs-move", {}).get(case_name, {}).get(routes.model, {})
    if not routes.mixed and all(v in measured for v, n in runs.items() if n):
        per = {v: _profile_usd(settings.prices, routes, measured[v]["by_purpose"]) for v, n in runs.items() if n}
        usd = sum(per[v] * n for v, n in runs.items() if n)
        return Estimate(suite, routes.model, "profile", usd, per, None, f"measured usage: {measured[next(iter(per))].get('source', 'a report')}")
    per, calls = {}, 0
    for variant, n in runs.items():
        if not n:
            continue
        requests = graph(variant)
        per[variant] = call_graph_usd(settings, routes, requests, count)
        calls += n * len(requests)
    usd = sum(per[v] * n for v, n in runs.items() if n)
    return Estimate(suite, routes.model, "call graph", usd, per, calls, _graph_note(settings, count is not None))


def planting(settings: Settings, routes: Routes, *, graph: Graph, count: TokenCounter | None = None) -> Estimate:
    """One planting run: the scripted arm's call graph (``graph()``: calibration, three variants
    of every arm, their summaries and judgements) at the live routes' list prices."""
    if all(m == SCRIPTED_MODEL for m in routes.by_purpose.values()):
        return Estimate("planting", routes.model, "free", 0.0, {}, None, "the scripted arm makes no paid call")
    graph = graph()
    if settings.raw["llm"]["replay_cache"]:  # a request asked twice is answered from the cache the second time
        graph = list(dict.fromkeys(graph))
    by_purpose = {}
    for r in graph:
        by_purpose.setdefault(r.purpose, []).append(r)
    per = {p: call_graph_usd(settings, routes, rs, count) for p, rs in sorted(by_purpose.items())}
    return Estimate("planting", routes.model, "call graph", call_graph_usd(settings, routes, graph, count), per,
                    len(graph), _graph_note(settings, count is not None))


def trip_vs_move_bound(settings: Settings, routes: Routes, case_name: str, *, gate: str, runs: Mapping[str, int]) -> Estimate:
    """The worst case from the stated caps (every call at its caps, output at max_tokens)."""
    per, calls = {}, 0
    for variant, n in runs.items():
        if n:
            per[variant], c = _bound_run(settings, routes, case_name, variant, gate)
            calls += n * c
    usd = sum(per[v] * n for v, n in runs.items() if n)
    return Estimate(f"trip-vs-move {case_name}", routes.model, "bound", usd, per, calls, "an upper bound from the stated caps")


def update_gate(
    settings: Settings, routes: Routes, *, samples: int, graph: Graph | None = None, sets: Mapping[str, list[dict]] | None = None,
    profile: Mapping | None = None, count: TokenCounter | None = None, suite: str = "update-gate",
) -> Estimate:
    """``graph()``: the requests the run makes on the scripted arm; without it, the bound over ``sets``."""
    if all(m == SCRIPTED_MODEL for m in routes.by_purpose.values()):
        return Estimate(suite, routes.model, "free", 0.0, {}, None, "the scripted arm makes no paid call")
    measured = (profile or {}).get("update-gate", {}).get(routes.model)
    if measured and not routes.mixed and measured.get("samples") == samples:
        usd = _profile_usd(settings.prices, routes, measured["by_purpose"])
        return Estimate(suite, routes.model, "profile", usd, {}, None, f"measured usage: {measured.get('source', 'a report')}")
    if graph is not None:
        graph = graph()
        usd = call_graph_usd(settings, routes, graph, count)
        note = _graph_note(settings, count is not None)
        if settings.raw["llm"]["batches"]:
            usd, note = usd * BATCH_PRICE, note + "; sent as Message Batches, at half the list price"
        return Estimate(suite, routes.model, "call graph", usd, {}, len(graph), note)
    return update_gate_bound(settings, routes, samples=samples, sets=sets)


def update_gate_bound(settings: Settings, routes: Routes, *, samples: int, sets: Mapping[str, list[dict]] | None = None) -> Estimate:
    """Every row's real prompts with output at max_tokens: the worst case."""
    suite = "update-gate"
    mt, prices = settings.max_tokens, settings.prices
    rows_by_set = sets if sets is not None else load_set_rows(settings.calibration_dir)
    usd, calls = 0.0, 0
    for rows in rows_by_set.values():
        for row in rows:
            for req in (
                prompts.contradiction(row["newer"], row["older"], max_tokens=mt[P.CONTRADICTION], replica=""),
                prompts.update(row["older"], row["newer"], confirm=False, max_tokens=mt[P.UPDATE], replica=""),
                prompts.update(row["older"], row["newer"], confirm=True, max_tokens=mt[P.UPDATE_CONFIRM], replica=""),
            ):
                usd += samples * _call_usd(prices, routes, req)
                calls += samples
    return Estimate(suite, routes.model, "bound", usd, {}, calls, "an upper bound: every row's real prompts, output at max_tokens")
