"""One protocol for the LLM suites, and the one runner they share.

A suite says what it runs and how it reads the answers: its units (each with its own spend
ledger, ceiling, client and folder), a unit's samples, how one sample is asked, how a unit is
scored, and the report's body. The runner owns the rest: the estimate (the call graph of the
suite's scripted twin), the confirmation and the ceiling (checked before every sample), the
incomplete run (a stop the suite declares, and where it happened), closing what a unit opened,
and the envelope facts every report states the same way (arm, remarks, spend).

A complete suite, one word a sample, its estimate priced from its own scripted run::

    from urd.agentmem import suite as S
    from urd.cost import agentmem as estimate_mod
    from urd.llm import SCRIPTED_MODEL, Request
    from urd.llm import purposes as P

    class Echo(S.Suite):
        name, ceiling_key = "echo", "max_usd_update_gate"
        responder = staticmethod(lambda request: request.user)  # the scripted arm echoes

        def __init__(self, settings, words):
            self.settings, self.words, self.key = settings, list(words), tuple(words)

        def units(self):
            return [S.Unit("all", ledger=("echo", "all"))]

        def start(self, unit, run):
            return run.llm

        def samples(self, unit, llm):
            return ((word, word) for word in self.words)

        def ask(self, llm, word):
            return llm.ask(Request(P.CONTRADICTION, "Repeat the word.", word, 8, replica=word))

        def score(self, unit, run, llm, answers, stop):
            return {"answers": answers, "incomplete": None if stop is None else self.why(stop)}

        def report(self, out):
            return {"suite": self.name, "model": out.model, "arm": out.arm, **out.done[0].body,
                    "spend": out.spend(per_unit=False), "remarks": out.remarks("Scripted arm.")}

        def twin(self, scratch, tmp):
            return Echo(scratch, self.words)

        def price(self, settings, routes, graph, *, profile, count):
            return estimate_mod.update_gate(settings, routes, samples=1, graph=graph, suite=self.name)

    report = S.run(Echo(settings, ["a", "b"]), "scripted", settings)

(tests/test_agentmem_suite.py runs this example as it stands.) The suites on this protocol: update-gate and
trip-vs-move (this room), planting (:mod:`urd.planting.suite`), urd rung 3's live cells (:mod:`urd.rung3.live`).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any

from ..cost.agentmem import Estimate, load_profile
from ..llm import SCRIPTED_MODEL, CallFailed, CeilingReached, RequestRefused, Routes
from ..stores.settings import Settings
from .runtime import FREE_REMARK, Run, RunContext, open_run, routes_for, scripted_calls


@dataclasses.dataclass(frozen=True)
class Unit:
    """One ledger's share of a run: its own client, meter, ceiling and folder (``dir``: emptied
    for it; None, none). Units with the same ``graph`` make the same calls: an estimate records one."""

    name: str
    ledger: tuple[str, ...] = ()
    dir: Path | None = None
    graph: Hashable = None


class CeilingStop(Exception):
    """The unit's committed spend reached its ceiling before a sample."""


@dataclasses.dataclass(frozen=True)
class Stop:
    """Why a unit ended short: the sample (or the suite's opening or finishing step) and the exception."""

    where: str
    exc: BaseException


@dataclasses.dataclass(frozen=True)
class Done:
    unit: Unit
    run: Run
    body: Any
    stop: Stop | None


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A finished run as the suite's report reads it: its units and the envelope facts."""

    model: str
    routes: Routes
    ctx: RunContext
    done: list[Done]

    @property
    def arm(self) -> str:
        return "live" if self.ctx.live else "scripted"

    def remarks(self, scripted: str) -> list[str]:
        return ([] if self.ctx.live else [scripted]) + ([FREE_REMARK] if self.ctx.ceiling_usd == 0.0 else [])

    def spend(self, *, per_unit: bool) -> dict:
        """The spend block (report_version 1). ``per_unit``: the ceiling is each unit's, and a live
        run states the ledgers' sum; else the one unit's ledger and Message Batches."""
        live = self.ctx.live
        usage = [d.run.meter.summary() for d in self.done]
        billed = [round(d.run.llm.ledger.billed_usd_for(d.run.llm.run), 6) if live else u["spent_usd"]
                  for d, u in zip(self.done, usage)]
        out = {
            "estimate": self.ctx.estimate.as_dict(),
            # what the runs were billed, repeats and replies never used included (live); the
            # replies the numbers rest on are used_usd
            "measured_usd": round(sum(billed), 6),
            "used_usd": round(sum(u["spent_usd"] for u in usage), 6),
            "replayed_usd": round(sum(u["replayed_usd"] for u in usage), 6),
        }
        if per_unit:
            out["ceiling_usd_per_run"] = self.ctx.ceiling_usd
            if live:
                out["ledger_usd"] = round(sum(d.run.llm.ledger.summary()["billed_usd"] for d in self.done), 6)
            return out
        (llm,) = (d.run.llm for d in self.done)
        out["ceiling_usd"] = self.ctx.ceiling_usd
        if live:
            out["ledger"] = llm.ledger.summary()
        if llm.batch_events:
            out["batches"] = llm.batch_events
        return out


class Suite:
    """What a suite supplies; the runner (:func:`run`) calls it in this order: ``prepare``, then
    per unit ``start``, ``samples`` (each asked by ``ask``), ``finish``, ``score``, ``close``;
    then ``report``. ``key`` names the call graph with the settings (its cache key)."""

    name: str
    ceiling_key: str  # settings.raw["spend"][ceiling_key]: the spend ceiling (a unit's)
    key: tuple = ()
    responder: Any = None  # the scripted arm's answers (None: the agent-memory suites' table)
    opening = finishing = ""  # where a stop in start() or finish() is said to be
    unpriced = "the scripted run behind the estimate stopped"  # why a stopped twin prices nothing

    def routes(self, model: str, settings: Settings, pins: dict) -> Routes:
        return routes_for(model, settings, pins)

    def ceiling(self, settings: Settings) -> float | None:
        return settings.raw["spend"][self.ceiling_key]

    def prepare(self, routes: Routes) -> None:
        """Once the run is confirmed and before any folder is cleared: read and check its inputs."""

    def units(self) -> list[Unit]:
        raise NotImplementedError

    def start(self, unit: Unit, run: Run) -> Any:
        """The unit's state (a fresh store, a client) from its opened run."""

    def samples(self, unit: Unit, state) -> Iterable[tuple[str, Any]]:
        """(where, sample) pairs; ``where`` names the sample in a stop."""
        raise NotImplementedError

    def ask(self, state, sample) -> Any:
        raise NotImplementedError

    def finish(self, state) -> None:
        """After the last sample, or a ceiling stop: an unmetered read-back."""

    def stops(self) -> tuple[type[BaseException], ...]:
        """What ends a unit as incomplete, not as a crash."""
        return (CallFailed, CeilingReached, RequestRefused, CeilingStop)

    def why(self, stop: Stop) -> str:
        return str(stop.exc)

    def score(self, unit: Unit, run: Run, state, answers: list, stop: Stop | None) -> Any:
        raise NotImplementedError

    def close(self, state) -> None:
        """Whatever ``start`` opened; called even when a unit crashed (``state`` None if start did)."""

    def report(self, out: Outcome) -> dict:
        raise NotImplementedError

    def twin(self, scratch: Settings, tmp: Path) -> Suite:
        """The scripted run whose calls the estimate prices, in the scratch settings and folder."""
        raise NotImplementedError

    def price(self, settings: Settings, routes: Routes, graph: Callable[..., list], *, profile,
              count) -> Estimate | None:
        """The estimate (``graph(key)``: the twin's requests, its units with that graph, one each;
        no key, all units); None: the run is confirmed without one."""
        raise NotImplementedError


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def run(suite: Suite, model: str, settings: Settings, *, pins=None, yes: bool = False, table=None, http_client=None,
        record: list | None = None, log: Callable[[str], None] = _stderr) -> dict:
    """The suite's report: estimated and confirmed before anything is called or cleared."""
    routes = suite.routes(model, settings, dict(pins or {}))
    est = estimate(suite, settings, routes, profile=load_profile(settings))
    ctx = open_run(settings, routes, estimate=est, ceiling_usd=suite.ceiling(settings), yes=yes, table=table,
                   http_client=http_client, record=record, log=log)
    suite.prepare(routes)
    return suite.report(Outcome(model, routes, ctx, [run_unit(suite, ctx, unit) for unit in suite.units()]))


def run_unit(suite: Suite, ctx: RunContext, unit: Unit) -> Done:
    """One unit: a stop the suite declares ends it incomplete (scored all the same); any other
    exception propagates once the unit is closed."""
    opened = ctx.open(unit.ledger, unit.dir, responder=suite.responder)
    state, answers, stop, where = None, [], None, suite.opening
    try:
        state = suite.start(unit, opened)
        for where, sample in suite.samples(unit, state):
            stop = _ceiling_stop(opened, ctx.ceiling_usd, where)
            if stop is not None:
                break
            answers.append(suite.ask(state, sample))
        where = suite.finishing
        suite.finish(state)
    except suite.stops() as exc:
        stop = Stop(where, exc)
    except BaseException:
        suite.close(state)
        raise
    try:
        return Done(unit, opened, suite.score(unit, opened, state, answers, stop), stop)
    finally:
        suite.close(state)


def _ceiling_stop(opened: Run, ceiling: float | None, where: str) -> Stop | None:
    committed = opened.llm.committed_usd
    if ceiling is None or committed < ceiling or committed <= 0:
        return None
    return Stop(where, CeilingStop(f"stopped before {where}: committed spend US${committed:.4f} reached the "
                                   f"ceiling US${ceiling:g}"))


def estimate(suite: Suite, settings: Settings, routes: Routes, *, profile=None, count=None) -> Estimate | None:
    """What the suite will cost: its ``price`` over its scripted twin's call graph."""
    return suite.price(settings, routes, functools.partial(call_graph, suite, settings), profile=profile, count=count)


def call_graph(suite: Suite, settings: Settings, key: Hashable = None) -> list:
    """Every request the suite's scripted twin makes (offline, free; computed once): the units
    whose graph is ``key``, one of them, or with no key every unit."""
    def scripted(scratch: Settings, tmp: Path, recorded: list) -> str | None:
        twin = suite.twin(scratch, tmp)
        routes = twin.routes(SCRIPTED_MODEL, scratch, {})
        ctx = open_run(scratch, routes, ceiling_usd=None, record=recorded)
        twin.prepare(routes)
        units = twin.units()
        units = units if key is None else [next(u for u in units if u.graph == key)]
        stops = [d.stop for d in (run_unit(twin, ctx, u) for u in units) if d.stop is not None]
        return twin.why(stops[0]) if stops else None

    return scripted_calls(settings, (suite.name, *suite.key, key), scripted, stopped=suite.unpriced)
