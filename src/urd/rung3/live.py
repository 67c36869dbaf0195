"""The live route of rung 3: an Anthropic model as the model of session B and of the control, and
the writer of the summary system's notes in session A, on the LLM suites' protocol and runner
(:mod:`urd.agentmem.suite`).

A cell (one answer or control job) is one unit; its samples are its (episode, request) pairs,
each asked once (:data:`urd.llm.purposes.REPLY`): fixed instructions in the system turn, the
episode's context and the request behind fences in the user turn (data never in the system
turn). The score is the raw replies; the summary job judges them as any model's. The runner
owns the estimate (this suite's scripted twin answers as :class:`urd.rung3.reader.ScriptedReader`
would, so the call graph and the reply lengths are a real run's), the confirmation, the ceiling
(``agentmem.spend.max_usd_urd3``, a cell's), the ledger and the replay cache; with
``agentmem.llm.batches`` a cell's requests go in one Message Batch first, at half the price. A cell that stops
short is not scored: :class:`LLMReader` raises :class:`Incomplete`, naming the stop and the spend.

Session A on the live route: a system that writes its fiche as text with the model (``summary``)
runs unchanged on a metered handle whose model is :class:`LLMWriter`. Each prompt it decodes (the
transcript and its instruction) becomes one request (:data:`urd.llm.purposes.NOTES`) of a
consolidate job's cell (:class:`Rung3Notes`); the reply is held to the system's own limits (its
tokens in the World tokenizer, its stop strings and bytes) and metered as the prompt's tokens plus
the reply's, so the contract's cap holds as on a backbone.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from ..agentmem import suite as S
from ..agentmem.runtime import is_live
from ..core.errors import UrdError
from ..cost import agentmem as estimate_mod
from ..data.rung3 import Family
from ..llm import SCRIPTED_MODEL, Request, Routes, Truncated, fence, fenced_blocks
from ..llm import purposes as P
from ..llm.client import BATCH_PRICE
from ..stores.settings import Settings, for_job, with_overrides
from .reader import known_sides, request_of, sides_for

SUITE = "urd3"
CEILING_KEY = "max_usd_urd3"
INSTRUCTIONS = (
    "You are the assistant in an ongoing collaboration with this user. The <context> block is what you "
    "have of your earlier sessions with them. Answer the request in the <request> block as the assistant, "
    "following whatever the context says about how this user wants answers written. Reply with the answer only."
)


def ask_request(context: str, prompt: str, max_tokens: int, replica: str) -> Request:
    """One session-B request: the context and the prompt behind fences."""
    return Request(P.REPLY, INSTRUCTIONS, f"{fence('context', context)}\n\n{fence('request', prompt)}", max_tokens,
                   replica=replica)


def scripted_responder(family: Family) -> Callable[[Request], str]:
    """Replies as the scripted reader would to the same context and request (the twin's model)."""

    def respond(request: Request) -> str:
        blocks = dict(fenced_blocks(request.user))
        if "context" not in blocks or "request" not in blocks:
            return None, "a rung-3 reply request has a context and a request block"
        ask = request_of(blocks["request"])
        return family.write(ask, sides_for(family, known_sides(family, blocks["context"]), ask))

    return respond


class Incomplete(UrdError):
    """A live cell stopped short (its ceiling, a failed call): nothing of it is scored."""


def routes(model: str, settings: Settings, pins: dict) -> Routes:
    pinned = {k: v for k, v in {**settings.pins, **pins}.items() if k == P.REPLY}
    return Routes.build(model, (P.REPLY,), pinned, source=f"{settings.origin}: agentmem.llm.pins")


class Rung3Live(S.Suite):
    """One cell: ``items`` are its (context, prompt) pairs, in order; ``cell`` names its ledger."""

    name, ceiling_key = SUITE, CEILING_KEY

    def __init__(self, settings: Settings, model: str, family: Family, items: list[tuple[str, str]], cell: str):
        self.s, self.model, self.family, self.items, self.cell = settings, model, family, list(items), cell
        self.responder = scripted_responder(family)
        digest = hashlib.sha256(json.dumps(self.items).encode()).hexdigest()[:16]
        self.key = (family.name, cell, digest)

    def routes(self, model: str, settings: Settings, pins: dict) -> Routes:
        return routes(model, settings, pins)

    def units(self) -> list[S.Unit]:
        return [S.Unit(self.cell, ledger=(SUITE, self.model, *self.cell.split("/")))]

    opening = "the message batch"

    def requests(self) -> list[Request]:
        mt = self.s.max_tokens[P.REPLY]
        return [ask_request(c, p, mt, replica=f"{self.cell}/{i}") for i, (c, p) in enumerate(self.items)]

    def start(self, unit, run):
        if self.s.raw["llm"]["batches"] and is_live(run.llm.routes):  # every request at once, at half price
            run.llm.prefetch(self.requests(), poll_s=float(self.s.raw["llm"]["batch_poll_s"]))
        return run.llm

    def samples(self, unit, llm):
        for i, request in enumerate(self.requests()):
            yield f"request {i + 1} of {len(self.items)}", request

    def ask(self, llm, request: Request) -> str:
        try:
            return llm.ask(request)
        except Truncated:
            return ""  # cut at every budget: scored as a failure, never a crash

    def score(self, unit, run, llm, answers: list, stop) -> dict:
        return {"replies": answers, "incomplete": None if stop is None else f"{stop.where}: {self.why(stop)}",
                "usage": run.meter.summary()}

    def report(self, out: S.Outcome) -> dict:
        (done,) = out.done
        return {"suite": SUITE, "cell": self.cell, "model": out.model, "arm": out.arm, **done.body,
                "spend": out.spend(per_unit=False),
                "remarks": out.remarks("Scripted arm: every reply came from the scripted reader.")}

    def twin(self, scratch: Settings, tmp: Path) -> Rung3Live:
        return Rung3Live(scratch, SCRIPTED_MODEL, self.family, self.items, self.cell)

    # what the estimate says of this cell's calls (Rung3Notes says it of its notes)
    purpose, label, twin_name = P.REPLY, "", "the scripted reader"
    priced_as = "the scripted reader's requests at list prices, input at {per:g} bytes a token, output at its replies' length"

    def output_tokens(self, requests: list[Request], per: float) -> int:
        """The typical reply's tokens: the twin's replies' mean length, what a model that follows the context writes."""
        out_bytes = sum(len(self.responder(r).encode()) for r in requests) / max(1, len(requests))
        return max(1, math.ceil(out_bytes / per))

    def price(self, settings: Settings, routes: Routes, graph, *, profile, count) -> estimate_mod.Estimate:
        if routes.model_for(self.purpose) == SCRIPTED_MODEL:
            return estimate_mod.Estimate(SUITE, routes.model, "free", 0.0, {}, None, f"{self.twin_name} makes no paid call")
        requests = graph()
        per = float(settings.raw["estimate"]["bytes_per_token"])
        priced = with_overrides(settings, {f"estimate.output_tokens.{self.purpose}": self.output_tokens(requests, per)})
        usd = estimate_mod.call_graph_usd(priced, routes, requests, count)
        note = f"{SUITE} {self.cell}{self.label}: " + self.priced_as.format(per=per)
        if settings.raw["llm"]["batches"]:
            usd, note = usd * BATCH_PRICE, note + "; sent as one Message Batch, at half the list price"
        return estimate_mod.Estimate(f"{SUITE} {self.cell}{self.label}", routes.model, "call graph", usd, {},
                                     len(requests), note)


def job_settings(settings: Settings, model: str, cell: str, step: str = "answer") -> Settings:
    """The settings narrowed to the job's own work folder (its cache, ledger, batch journal): a
    control's, or a cell's answer or consolidate job's."""
    parts = cell.split("/")
    if parts[0] == "control":
        return for_job(settings, "urd3-control", model=model, family=parts[1])
    return for_job(settings, f"urd3-{step}", model=model, system=parts[0], family=parts[1], split=parts[2])


# --- session A: the notes of a system that writes them with the model -------------------------
NOTES_INSTRUCTIONS = (
    "Continue the text in the <text> block from exactly where it ends, as its author would. "
    "Reply with the continuation only."
)


def notes_request(text: str, max_tokens: int, replica: str) -> Request:
    """One prompt a system decodes in session A (the transcript and the system's instruction)."""
    return Request(P.NOTES, NOTES_INSTRUCTIONS, fence("text", text), max_tokens, replica=replica)


def scripted_notes(plugins: dict | None = None) -> Callable[[Request], str]:
    """Notes as a note-taker that keeps exactly the latest preference set writes them: the
    oracle's statements (urd.rung3.probes), one a line (the writer twin's model)."""
    from .probes import family_of, statements

    def respond(request: Request) -> str:
        blocks = dict(fenced_blocks(request.user))
        if "text" not in blocks:
            return None, "a rung-3 notes request has a text block"
        return "\n".join(statements(family_of(blocks["text"], plugins), blocks["text"]))

    return respond


class Rung3Notes(Rung3Live):
    """One consolidate job: ``items`` are the (prompt text, max_tokens) the system decodes."""

    def __init__(self, settings: Settings, model: str, items: list[tuple[str, int]], cell: str,
                 plugins: dict | None = None):
        self.s, self.model, self.items, self.cell, self.plugins = settings, model, list(items), cell, plugins
        self.responder = scripted_notes(plugins)
        digest = hashlib.sha256(json.dumps(self.items).encode()).hexdigest()[:16]
        self.key = ("notes", cell, digest)

    def routes(self, model: str, settings: Settings, pins: dict) -> Routes:
        pinned = {k: v for k, v in {**settings.pins, **pins}.items() if k == P.NOTES}
        return Routes.build(model, (P.NOTES,), pinned, source=f"{settings.origin}: agentmem.llm.pins")

    def units(self) -> list[S.Unit]:
        return [S.Unit(self.cell, ledger=(SUITE, self.model, "notes", *self.cell.split("/")))]

    def requests(self) -> list[Request]:
        return [notes_request(text, mt, replica=f"{self.cell}/notes/{i}") for i, (text, mt) in enumerate(self.items)]

    def ask(self, llm, request: Request) -> str:
        return llm.ask(request, cut_ok=True)  # the system keeps a prefix of its notes anyway

    def twin(self, scratch: Settings, tmp: Path) -> Rung3Notes:
        return Rung3Notes(scratch, SCRIPTED_MODEL, self.items, self.cell, self.plugins)

    purpose, label, twin_name = P.NOTES, " notes", "the scripted writer"
    priced_as = ("the system's prompts at list prices, input at {per:g} bytes a token, output at the oracle's "
                 "statements' length, at most each prompt's limit")

    def output_tokens(self, requests: list[Request], per: float) -> int:
        out = [min(r.max_tokens, max(1, math.ceil(len(self.responder(r).encode()) / per))) for r in requests]
        return max(1, math.ceil(sum(out) / max(1, len(out))))


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_cell(suite: Rung3Live, model: str, settings: Settings, yes: bool, http_client, log) -> dict:
    """One cell on the runner: its report, or Incomplete naming the stop and what was billed."""
    report = S.run(suite, model, settings, yes=yes, http_client=http_client, log=log)
    spend, what = report["spend"], f"{SUITE} {suite.cell}{suite.label} on {model}"
    if report["incomplete"]:
        raise Incomplete(f"{what}: incomplete, {report['incomplete']} (billed US${spend['measured_usd']:.4f}; "
                         "rerun to go on from the replay cache)")
    log(f"{what}: billed US${spend['measured_usd']:.4f}, replayed US${spend['replayed_usd']:.4f}")
    return report


class LLMReader:
    """The model of a cell's session B (or control) through the runner; ``report`` is the last run's."""

    reads_states = False

    def __init__(self, model: str, family: Family, settings: Settings, cell: str, *, yes: bool = False,
                 http_client=None, log: Callable[[str], None] = _stderr):
        self.name, self.family, self.settings, self.cell = model, family, settings, cell
        self.yes, self.http_client, self.log, self.report = yes, http_client, log, None

    def suite(self, contexts, prompts: list[list[str]]) -> Rung3Live:
        items = []
        for context, ps in zip(contexts, prompts, strict=True):
            if context.state is not None:
                raise UrdError(f"the {self.name} reader reads text only, not a model state")
            items += [(context.text, p) for p in ps]
        return Rung3Live(self.settings, self.name, self.family, items, self.cell)

    def replies(self, contexts, prompts: list[list[str]]) -> list[list[str]]:
        self.report = run_cell(self.suite(contexts, prompts), self.name, self.settings, self.yes,
                               self.http_client, self.log)
        flat, out = iter(self.report["replies"]), []
        for ps in prompts:
            out.append([next(flat) for _ in ps])
        return out


class LLMWriter:
    """The model of a live consolidate job, as the metered handle (urd.session.handle) calls it:
    ``generate_groups`` sends every prompt of the call as one cell (:class:`Rung3Notes`) and
    returns each reply as a Generation held to the row's limits. It holds no state: a system
    that reads or carries one has no cell on an LLM (urd.rung3.plan.systems)."""

    decodes_remotely = True  # the handle hands generate_groups to it, with no cached transcript state

    def __init__(self, model: str, settings: Settings, cell: str, plugins: dict | None = None, *, yes: bool = False,
                 http_client=None, log: Callable[[str], None] = _stderr):
        self.name, self.settings, self.cell, self.plugins = model, settings, cell, plugins
        self.yes, self.http_client, self.log, self.report = yes, http_client, log, None
        self.tokens_processed = 0

    @property
    def tokenizer(self):
        from ..backbone.tokenizer import get_tokenizer

        return get_tokenizer()

    def generate_groups(self, groups, *, max_new_tokens, stop=("\n",), counts=None, max_bytes=None):
        limits = [max_new_tokens] * len(groups) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        caps = [max_bytes] * len(groups) if max_bytes is None or isinstance(max_bytes, int) else list(max_bytes)
        items = []
        for (state, prompts), limit in zip(groups, limits, strict=True):
            if state is not None:
                raise UrdError(f"{self.name} is a model behind an API: it holds no state to decode from")
            items += [(self.tokenizer.decode(p), int(limit)) for p in prompts]
        suite = Rung3Notes(self.settings, self.name, items, self.cell, self.plugins)
        self.report = run_cell(suite, self.name, self.settings, self.yes, self.http_client, self.log)
        replies, out = iter(self.report["replies"]), []
        for g, ((_, prompts), limit, cap) in enumerate(zip(groups, limits, caps)):
            row = []
            for p in prompts:
                gen = self._held(next(replies), limit, stop, cap)
                n = len(p) + len(gen.tokens)  # the prompt read and every token written, as a backbone meters them
                self.tokens_processed += n
                if counts is not None:
                    counts[g] += n
                row.append(gen)
            out.append(row)
        return out

    def _held(self, reply: str, limit: int, stop, cap: int | None):
        """The reply as a backbone's decode would end it: at the first stop string, at `limit`
        World tokens, at `cap` bytes."""
        from ..backbone.adapter import END, MAX_BYTES, MAX_NEW_TOKENS, STOP, Generation
        from ..systems.base import utf8_prefix

        tokens, text, reason = self.tokenizer.encode(reply), reply, END
        if len(tokens) > limit:  # metered as written, up to the limit: what follows a stop string too
            tokens = tokens[:limit]
            text, reason = self.tokenizer.decode(tokens), MAX_NEW_TOKENS
        cuts = [text.find(s) for s in stop if s in text]
        if cuts:
            text, reason = text[: min(cuts)], STOP
        if cap is not None and len(text.encode("utf-8")) > cap:
            text, reason = utf8_prefix(text, cap), MAX_BYTES
        return Generation(text, tuple(tokens), None, reason)


class _Recorder(LLMWriter):
    """A writer that records the prompts it is asked and writes nothing (the estimate's graph)."""

    def __init__(self):
        super().__init__("recorder", None, "")
        self.items: list[tuple[str, int]] = []

    def generate_groups(self, groups, *, max_new_tokens, stop=("\n",), counts=None, max_bytes=None):
        from ..backbone.adapter import END, Generation

        limits = [max_new_tokens] * len(groups) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        for (_, prompts), limit in zip(groups, limits, strict=True):
            self.items += [(self.tokenizer.decode(p), int(limit)) for p in prompts]
        return [[Generation("", (), None, END) for _ in prompts] for _, prompts in groups]


def notes_items(build, family_name: str, sessions: list[dict], split: str, budget: int | None,
                factor: int) -> list[tuple[str, int]]:
    """The (prompt, token limit) pairs a system sends its writer in one consolidate job, found by
    running its session A (`build(handle)` makes it) on a writer that records them: its prompts do
    not depend on what it is answered."""
    from ..harness.runner import consolidate_cell
    from ..session.handle import ModelHandle

    recorder = _Recorder()
    consolidate_cell(build(ModelHandle(recorder)), family_name, sessions, split, budget, factor)
    return recorder.items
