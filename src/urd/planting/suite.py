"""One planting run on one model: calibrate the judge, run the unplanted twins, gate, then the
planted worlds and the wound counterfactual; every decision judged intent by intent.

Order (the write-up's section 6): the judge is calibrated first, and nothing is judged by a
judge below the bar; the unplanted twins of every arm run next, and if any plant scores
above the gate's bar in any arm the run stops before a planted world is shown to anyone.
A live run needs confirmation, and stops at its ceiling with the report marked incomplete.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

from ..agentmem.suite import CeilingStop, Outcome, Stop, Suite, Unit, run
from ..agentmem.suite import call_graph as suite_call_graph
from ..agentmem.suite import estimate as suite_estimate
from ..core.errors import InputError, UrdError
from ..core.io import canonical_json, sha256_bytes, sha256_file
from ..cost import agentmem as estimate_mod
from ..llm import SCRIPTED_MODEL, CeilingReached, LLMError
from ..llm.parse import json_object
from ..stores.settings import Settings
from . import arms as arms_mod
from . import judge as judge_mod
from . import prompts, report
from . import routes as routes_mod
from . import world as world_mod
from .scripted import PlantingResponder
from .store import Store
from .world import PLANTS, VARIANTS, Shape, load_roster, read_world

STOP_CALIBRATION, STOP_GATE, STOP_CEILING = "calibration", "baseline gate", "ceiling"


class _CountingLLM:
    """The run's LLM as a context strategy sees it: every request it asks is counted (calls, and
    request and reply bytes, for the token estimate where no usage is measured)."""

    def __init__(self, llm) -> None:
        self._llm, self.calls, self.bytes = llm, 0, 0
        self.reused_tokens, self.reused_measured = 0, True

    def ask(self, request) -> str:
        reply = self._llm.ask(request)
        self.calls += 1
        self.bytes += request.size_bytes() + len(reply.encode())
        return reply

    def reuse(self, tokens: int, measured: bool) -> None:
        """A summary another arm already paid for: this arm's context costs its tokens all the same
        (an arm's cost is what it would cost alone, whichever arm ran first)."""
        self.reused_tokens += tokens
        self.reused_measured &= measured


class GateStopped(UrdError):
    """An unplanted twin scored a plant above the bar: the plant or the judge needs fixing."""

    def __init__(self, message: str, gate: dict):
        super().__init__(message)
        self.gate = gate


def gate_bar(share: str, seeds: int) -> int:
    """The most unplanted hits a plant may score: the configured share of the seeds ("2/6":
    2 of 6, 4 of 12, 1 of 3), rounded down."""
    hits, of = (int(x) for x in str(share).split("/"))
    return math.floor(Fraction(hits, of) * seeds)


def shown(prompt: str, cited: str) -> bool:
    """Whether the prompt shows the ID as a token of its own (ev-S1-1 is not shown by ev-S1-10)."""
    return re.search(rf"(?<![\w-]){re.escape(cited)}(?![\w-])", prompt) is not None


def _parse_intents(reply: str) -> list[dict] | None:
    data = json_object(reply)
    items = data.get("intents") if data else None
    if not isinstance(items, list) or not 1 <= len(items) <= 3:  # fewer than 3: parsed, counted as short
        return None
    out = []
    for it in items:
        if not isinstance(it, dict) or not isinstance(it.get("intent"), str):
            return None
        cites = it.get("cites") or []
        if not isinstance(cites, list) or not all(isinstance(c, str) for c in cites):
            return None
        out.append({"intent": it["intent"], "cites": cites})
    return out


def ledger_target(model: str) -> tuple[str, ...]:
    """The run's spend ledger (the ceiling is the whole run's)."""
    return ("planting", model)


class Run:
    """One run's world, its store and its decisions (what the report reads)."""

    def __init__(self, settings: Settings, model: str, routes, *, world_path: Path, roster=None,
                 log: Callable[[str], None] = print):
        self.s, self.p = settings, settings.raw["planting"]
        self.model, self.routes, self.log = model, routes, log
        self.roster = roster or load_roster()
        self.shape = Shape.from_settings(self.p)
        self.arms = arms_mod.arms_from(self.p)
        self.layout = arms_mod.Layout.from_settings(self.p, self.shape.terms)
        self.world_path = Path(world_path)
        self.world = read_world(self.world_path)
        self.check_world()  # before the run's folder (a previous store) is cleared

    def attach(self, opened) -> Run:
        """The run's client and its (emptied) folder, with the store opened in it."""
        self.llm, self.meter, self.run_dir = opened.llm, opened.meter, opened.dir
        self.store = Store(self.run_dir / "store.sqlite")
        self.summaries: dict[tuple[str, str], str] = {}
        self.decisions: list[dict] = []
        self.max_tokens = self.s.max_tokens
        return self

    # --- the store ------------------------------------------------------------------------------
    def check_world(self) -> None:
        """A world that does not fit the settings and the roster is refused before anything is
        cleared, written or called."""
        chars = [c["id"] for c in self.roster["characters"]]
        want = {(seed, v, c) for seed in range(1, self.shape.seeds + 1) for v in VARIANTS for c in chars}
        if set(self.world) != want:
            odd = sorted(set(self.world) ^ want)[0]
            raise InputError(self.world_path, "worlds", f"seeds 1..{self.shape.seeds} x {list(VARIANTS)} x the "
                             f"roster's {chars}", f"{'extra' if odd in self.world else 'missing'} {odd}")
        per_term = [self.shape.events_per_term] * self.shape.terms
        for key, events in sorted(self.world.items()):
            counts = [sum(e.term == t for e in events) for t in range(1, self.shape.terms + 1)]
            if counts != per_term or len(events) != sum(per_term):
                raise InputError(self.world_path, f"events of {key}", f"{self.shape.events_per_term} a term over "
                                 f"terms 1..{self.shape.terms}", f"{counts} (of {len(events)})")

    def fill_store(self) -> None:
        """Write every world into the store, term by term, as a playthrough would."""
        for (seed, variant, cid), events in sorted(self.world.items()):
            for term in range(1, self.shape.terms + 1):
                self.store.write_term(_world(seed, variant), cid, term, [e for e in events if e.term == term])

    # --- one decision ---------------------------------------------------------------------------
    def _summarize(self, world: str, cid: str, llm):
        def summarize(lines: str, first: int, last: int) -> str:
            # Cached per character, world and what is summarised: another arm asking for the same
            # summary reads it; one asking for another stretch gets its own.
            key = (world, cid, first, last, sha256_bytes(lines.encode()))
            if key in self.summaries:
                text, tokens, measured = self.summaries[key]
                llm.reuse(tokens, measured)
                return text
            req = prompts.summarize(lines, first=first, last=last, words=self.layout.summary_words,
                                    max_tokens=self.max_tokens["summarize"])
            before = len(self.meter.records)
            reply = llm.ask(req)
            tokens, measured = self._tokens(self.meter.records[before:], req.size_bytes() + len(reply.encode()))
            self.summaries[key] = (reply.strip(), tokens, measured)
            return reply.strip()
        return summarize

    def _tokens(self, records, request_bytes: int) -> tuple[int, bool]:
        """Tokens of some calls: measured usage where the API reported it, else their bytes at the
        stated bytes per token (the scripted arm)."""
        measured = sum(r.usage.input_tokens + r.usage.cache_read_tokens + r.usage.cache_write_tokens
                       + r.usage.output_tokens for r in records)
        return (measured, True) if measured else \
            (math.ceil(request_bytes / float(self.s.raw["estimate"]["bytes_per_token"])), False)

    def decide(self, variant: str, arm, c: dict, seed: int) -> dict:
        world = _world(seed, variant)
        events = self.world[(seed, variant, c["id"])]
        plant_ids = {e.plant: e.id for e in events if e.plant in PLANTS}
        counted = _CountingLLM(self.llm)  # the strategy's own calls (a summary, a retrieval)
        calls_before = len(self.meter.records)
        layout = self.layout.for_seed(seed, self.roster["filler"]["weights"]) if arm.seeded_keep else self.layout
        secs = arm.sections(arms_mod.DecisionView(self.store, world, c["id"], self.shape.decision_term, layout,
                                                  self._summarize(world, c["id"], counted), counted))
        strategy_tokens, strategy_measured = self._tokens(self.meter.records[calls_before:], counted.bytes)
        if counted.reused_tokens:  # a summary read from this run's own cache: charged as if asked
            strategy_measured = (strategy_measured or not counted.calls) and counted.reused_measured
            strategy_tokens += counted.reused_tokens
        req = prompts.decide(c["profile"], c["motivation"], secs, term=self.shape.decision_term,
                             max_tokens=self.max_tokens["decide"], replica=f"seed-{seed}")
        before = len(self.meter.records)
        reply = self.llm.ask(req)
        usage = self.meter.records[-1].usage if len(self.meter.records) > before else None
        measured = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens if usage else 0
        tokens = measured or math.ceil(req.size_bytes() / float(self.s.raw["estimate"]["bytes_per_token"]))
        intents = _parse_intents(reply)
        d = {"variant": variant, "arm": arm.name, "character": c["id"], "seed": seed, "prompt_tokens": tokens,
             "tokens_measured": bool(measured), "parsed": intents is not None, "intents": intents or [],
             "plant_ids": plant_ids, "plant_events": {p: c["plants"][p]["text"] for p in PLANTS},
             # what building the context cost beside the decision's own prompt: input and output of its calls
             "strategy_calls": counted.calls, "strategy_tokens": strategy_tokens,
             "strategy_tokens_measured": strategy_measured}
        d["short"] = intents is not None and len(intents) < 3
        # Fabricated: cited, but not in what this prompt showed. A real event the arm summarised
        # or dropped is fabricated as much as an ID no event has; the two are counted apart.
        cited = sorted({x for it in d["intents"] for x in it["cites"]})
        d["fabricated"] = [x for x in cited if not shown(req.user, x)]
        d["fabricated_not_shown"] = [x for x in d["fabricated"] if self.store.has_id(world, c["id"], x)]
        d["fabricated_no_such_event"] = [x for x in d["fabricated"] if x not in d["fabricated_not_shown"]]
        d["judged"] = {}
        for plant in PLANTS:
            # each decision judged on its own, as a live run's distinct intents would be
            rulings = judge_mod.judge(self.llm, c["plants"][plant]["text"], [it["intent"] for it in d["intents"]],
                                      max_tokens=self.max_tokens["judge"],
                                      replica=f"{variant}/{arm.name}/{c['id']}/seed-{seed}")
            d["judged"][plant] = None if rulings is None else [{"shaped": r.shaped, "specific": r.specific} for r in rulings]
        return d

    def samples(self, variant: str):
        """Every decision of a variant, as (where, sample); the progress is logged as they are made."""
        n = 0
        total = len(self.arms) * len(self.roster["characters"]) * self.shape.seeds
        for arm in self.arms:
            for c in self.roster["characters"]:
                for seed in range(1, self.shape.seeds + 1):
                    yield f"{variant}/{arm.name}/{c['id']}/seed-{seed}", (variant, arm, c, seed)
                    n += 1
                    if n % 18 == 0 or n == total:
                        self.log(f"[planting {self.model}] {variant}: {n}/{total} decisions, spent "
                                 f"US${self.meter.spent_usd:.2f}")

    def gate(self) -> dict:
        """The baseline gate over the unplanted twins: passed only when every reply was read and
        no plant scored above the bar in any arm; the worst cell and every cell above the bar."""
        share = str(self.p["gate"]["max_unplanted"])
        bar = gate_bar(share, self.shape.seeds)
        twins = [d for d in self.decisions if d["variant"] == "unplanted"]
        off = [d for d in twins if not d["parsed"] or any(r is None for r in d["judged"].values())]
        cells = []
        for arm in self.arms:
            for c in self.roster["characters"]:
                for plant in PLANTS:
                    hits = sum(report.hit(d, plant) for d in twins if d["arm"] == arm.name and d["character"] == c["id"])
                    cells.append({"arm": arm.name, "character": c["id"], "name": c["name"], "plant": plant,
                                  "hits": hits, "event": c["plants"][plant]["text"]})
        worst = max(cells, key=lambda x: x["hits"]) if cells else None
        over = [x for x in cells if x["hits"] > bar]
        gate = {"max_unplanted": share, "max_unplanted_hits": bar, "seeds": self.shape.seeds, "worst": worst,
                "over_bar": over, "off_protocol": len(off), "passed": not over and not off}
        if off:  # an unread reply scores nothing, which would pass the gate for the wrong reason
            d = off[0]
            gate["why"] = (f"baseline gate: {len(off)} unplanted decisions have a reply off its protocol (the "
                           f"character's or the judge's), first {d['arm']}/{d['character']}/seed {d['seed']}; "
                           "the gate cannot pass on unread replies. No planted world was run.")
        elif over:
            x = over[0]
            gate["why"] = (f"baseline gate: the {x['plant']} planted for {x['character']} ({x['name']}), \"{x['event']}\", "
                           f"scored {x['hits']}/{self.shape.seeds} in the unplanted twin of arm {x['arm']} (bar: at most "
                           f"{bar}/{self.shape.seeds}, {share} of the seeds); {len(over)} cells above the bar; fix the "
                           "plant or the judge. No planted world was run.")
        return gate


def _world(seed: int, variant: str) -> str:
    """A world's name in the store, as a strategy reads it: naming neither the seed nor the
    variant (planted, unplanted, apologised), which is the answer key. A digest, not a secret."""
    return "world-" + sha256_bytes(f"planting/{seed}/{variant}".encode())[:10]


class Planting(Suite):
    """The suite on the runner: one unit (the ceiling is the whole run's); the judge's calibration,
    then every decision of the unplanted twins, the gate, and the planted and apologised worlds.
    ``through_stops``: the estimate's run; a calibration or gate stop is appended to it and the
    run goes on, so that the call graph is a whole run's."""

    name, ceiling_key = "planting", "max_usd_planting"
    unpriced = "the scripted planting run behind the estimate stopped"

    def __init__(self, settings: Settings, model: str, *, world_path: Path | None = None, master_seed: int | None = None,
                 roster=None, responder=None, run_dir: Path | None = None, log: Callable[[str], None] = print,
                 through_stops: list | None = None):
        self.s, self.p, self.model, self.log = settings, settings.raw["planting"], model, log
        self.world_path, self.master_seed, self.roster, self.given_responder = world_path, master_seed, roster, responder
        self.run_dir, self.through_stops = run_dir, through_stops
        self.key = (master_seed,)

    def checked(self) -> Planting:
        """The suite once the judge's calibration set is read: before a store is cleared."""
        self.cal = judge_mod.load_set(self.p["judge"]["calibration_set"], self.p["judge"]["registry"])
        return self

    def routes(self, model: str, settings: Settings, pins: dict):
        return routes_mod.routes(model, settings, pins)

    def ceiling(self, settings: Settings) -> float:
        return float(settings.raw["spend"]["max_usd_planting"])

    def prepare(self, routes) -> None:
        # a live run is confirmed before the roster and the world are read and its folder cleared
        self.run = Run(self.s, self.model, routes, world_path=self.world_path, roster=self.roster, log=self.log)
        self.responder = self.given_responder or PlantingResponder(self.run.roster)

    def units(self) -> list[Unit]:
        return [Unit("run", ledger_target(self.model), self.run_dir or self.s.work_dir / "planting" / self.model)]

    def start(self, unit: Unit, opened) -> Run:
        self.state = {"status": "complete", "stop": None, "calibration": None, "gate": None}
        return self.run.attach(opened)

    def samples(self, unit: Unit, run: Run):
        run.fill_store()
        yield STOP_CALIBRATION, None
        yield from run.samples("unplanted")
        self.state["gate"] = run.gate()
        if not self.state["gate"]["passed"]:
            self._stop(GateStopped(self.state["gate"]["why"], self.state["gate"]), self.state["gate"]["why"])
        yield from run.samples("planted")
        yield from run.samples("apologised")

    def ask(self, run: Run, sample) -> None:
        if sample is not None:
            run.decisions.append(run.decide(*sample))
            return
        min_correct = math.ceil(float(self.p["judge"]["min_correct_share"]) * len(self.cal["items"]) - 1e-9)
        try:
            self.state["calibration"] = judge_mod.calibrate(run.llm, self.cal, max_tokens=run.max_tokens["judge"],
                                                            min_correct=min_correct)
        except judge_mod.CalibrationFailed as exc:
            self.state["calibration"] = exc.result
            self._stop(exc, f"the judge's {STOP_CALIBRATION}: {exc}")

    def _stop(self, exc: Exception, why: str) -> None:
        """A calibration or gate stop: the run's end, or (the estimate's run) a note, and on."""
        if self.through_stops is None:
            raise exc
        self.through_stops.append(why)

    def stops(self) -> tuple[type[BaseException], ...]:
        # a failed, refused or cut call: the run did not measure what it set out to
        return (judge_mod.CalibrationFailed, GateStopped, LLMError, CeilingStop)

    def score(self, unit: Unit, opened, run: Run, answers: list, stop: Stop | None) -> dict:
        state, exc = self.state, None if stop is None else stop.exc
        if isinstance(exc, judge_mod.CalibrationFailed):
            state.update(status="stopped", stop={"at": STOP_CALIBRATION, "why": str(exc)}, calibration=exc.result)
        elif isinstance(exc, GateStopped):
            state.update(status="stopped", stop={"at": STOP_GATE, "why": str(exc)}, gate=exc.gate)
        elif isinstance(exc, CeilingReached | CeilingStop):
            state.update(status="incomplete", stop={"at": STOP_CEILING, "why": str(exc)})
        elif exc is not None:
            state.update(status="failed", stop={"at": "a call failed", "why": str(exc)})
        return state

    def close(self, run: Run | None) -> None:
        if run is not None:
            run.store.close()

    def report(self, out: Outcome) -> dict:
        """The report (urd.planting.report) of the run; `status` says whether it completed."""
        (done,) = out.done
        return report.build(self.run, done.body, world_sha256=sha256_file(self.run.world_path), calibration=self.cal)

    def twin(self, scratch: Settings, tmp: Path) -> Planting:
        path = tmp / "world.jsonl"
        world_mod.write_world(path, self.master_seed, Shape.from_settings(scratch.raw["planting"]), load_roster())
        stops = _SCRIPTED_STOPS[_stops_key(self.s, self.master_seed)] = []
        return Planting(scratch, SCRIPTED_MODEL, world_path=path, log=lambda line: None, through_stops=stops).checked()

    def price(self, settings: Settings, routes, graph, *, profile, count):
        """A run of a given world is confirmed without an estimate; one of ``master_seed``'s world
        is priced by the scripted arm's call graph (see :func:`estimate`)."""
        if self.master_seed is None:
            return None
        est = estimate_mod.planting(settings, routes, graph=graph, count=count)
        stops = scripted_stops(settings, self.master_seed) if est.source == "call graph" else []
        if stops:
            est = dataclasses.replace(est, note=f"{est.note}; the scripted arm tripped ({stops[0].split(':')[0]}), "
                                                "priced as a run that passes it")
        return est


def run_suite(model: str, settings: Settings, *, world_path: Path, pins=None, yes=False, roster=None,
              responder=None, record=None, log=print, run_dir: Path | None = None, http_client=None,
              through_stops: list | None = None) -> dict:
    """The report (urd.planting.report) of one run; `status` says whether it completed.
    `responder`: the scripted arm's (default: the roster's tables, urd.planting.scripted)."""
    suite = Planting(settings, model, world_path=world_path, roster=roster, responder=responder, run_dir=run_dir,
                     log=log, through_stops=through_stops).checked()
    return run(suite, model, settings, pins=pins, yes=yes, record=record, http_client=http_client, log=log)


_SCRIPTED_STOPS: dict[tuple, list[str]] = {}  # where the scripted run behind an estimate would have stopped


def call_graph(settings: Settings, master_seed: int) -> list:
    """Every request one whole run makes on the scripted arm, over the world of ``master_seed``
    (offline, free; computed once). The scripted arm's own calibration or gate stop does not cut
    it short: a live model is priced for the run it would make (`scripted_stops` says why)."""
    return suite_call_graph(Planting(settings, SCRIPTED_MODEL, master_seed=master_seed), settings)


def _stops_key(settings: Settings, master_seed: int) -> tuple:
    return canonical_json(settings.raw), master_seed


def scripted_stops(settings: Settings, master_seed: int) -> list[str]:
    call_graph(settings, master_seed)
    return _SCRIPTED_STOPS.get(_stops_key(settings, master_seed), [])


def estimate(settings: Settings, routes, *, master_seed: int, count=None):
    """What a run will cost: the scripted arm's call graph at the live routes' list prices,
    every decision's judge calls priced as distinct requests (a live model's intents are)."""
    return suite_estimate(Planting(settings, SCRIPTED_MODEL, master_seed=master_seed), settings, routes, count=count)
