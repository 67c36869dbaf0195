"""The update-gate suite: every registered pair asked N times, the contradiction and
update probes on each sample, and three gates scored from the same answers."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from .. import __version__
from ..core.errors import InputError
from ..cost import agentmem as estimate_mod
from ..data.agentmem.pair_sets import load_set_rows, set_info
from ..llm import SCRIPTED_MODEL, Routes
from ..llm import purposes as P
from ..stores import registry
from ..stores.base import StoreFailed, StoreRun
from ..stores.reference import prompts, replies
from ..stores.reference.gates import CHANGES, GATES
from ..stores.reference.probes import PairProbe
from ..stores.registry import REFERENCE
from ..stores.settings import Settings
from .runtime import is_live, label_store, store_estimate
from .scoring import STORE_GATE, score_set, score_store_set
from .scripted import ScriptedTable
from .suite import Outcome, Stop, Suite, Unit, run
from .suite import estimate as suite_estimate

SUITE = "update-gate"
REPORT_VERSION = 1


def ask_sample(llm, row: Mapping, *, max_tokens, replica: str) -> dict:
    """Both probes on one sample, whatever the other answered, so every gate can be scored."""
    probe = PairProbe(llm, row["older"], row["newer"], max_tokens=max_tokens, replica=replica)
    probe.contradiction()
    probe.update()
    return probe.answers()


def prefetch_in_batches(llm, rows_by_set: Mapping[str, list[dict]], samples: int, settings: Settings,
                        log: Callable[[str], None]) -> int:
    """The calls of every sample in two Message Batches: the contradiction and first update
    readings (independent of each other), then the confirmations their CHANGES readings call
    for. The requests are the ones PairProbe builds, so the replay below asks nothing twice."""
    mt = settings.max_tokens
    poll = settings.raw["llm"]["batch_poll_s"]
    samples_of = [(row, f"{name}/{row['id']}/sample-{s}") for name, rows in rows_by_set.items() for row in rows
                  for s in range(1, samples + 1)]
    first = {}
    for row, replica in samples_of:
        first[replica] = prompts.update(row["older"], row["newer"], confirm=False, max_tokens=mt[P.UPDATE], replica=replica)
    contradictions = [prompts.contradiction(row["newer"], row["older"], max_tokens=mt[P.CONTRADICTION], replica=replica)
                      for row, replica in samples_of]
    sent = llm.prefetch([*contradictions, *first.values()], poll_s=poll)
    log(f"batch 1: {sent} contradiction and first update readings")
    confirm = [prompts.update(row["older"], row["newer"], confirm=True, max_tokens=mt[P.UPDATE_CONFIRM], replica=replica)
               for row, replica in samples_of
               if replies.update_verdict(llm.peek(first[replica]) or "") == CHANGES]
    second = llm.prefetch(confirm, poll_s=poll)
    log(f"batch 2: {second} confirmations")
    return sent + second


class UpdateGate(Suite):
    """The suite on the runner: one unit (the ceiling is the whole run's), a sample a pair, asked N times."""

    name, ceiling_key = SUITE, "max_usd_update_gate"

    def __init__(self, settings: Settings, model: str, *, store: str = REFERENCE, samples: int | None = None,
                 log: Callable[[str], None] = lambda line: None):
        self.about = registry.describe(store, settings.store_plugins)
        self.s, self.model, self.store, self.log = settings, model, store, log
        self.n = samples or settings.raw["update_gate"]["samples"]
        self.key = (self.n, store)
        self.unpriced = f"store {store} cannot run offline on the scripted arm"

    def checked(self) -> UpdateGate:
        """The suite once its inputs are read: before anything is estimated (an estimate alone
        reads them only if it runs the scripted twin)."""
        if not self.about["update_decision"]:
            raise InputError(f"store {self.store}", registry.UPDATE_DECISION,
                             "a store with an update decision: the update-gate suite does not measure one without it")
        self.rows_by_set = load_set_rows(self.s.calibration_dir)
        self.info = set_info(self.s.calibration_dir)
        return self

    def units(self) -> list[Unit]:
        # a plug-in store gets an empty folder; the reference store's decision is a call, with none
        folder = None if self.store == REFERENCE else self.s.work_dir / "stores" / SUITE / self.model / f"store-{self.store}"
        return [Unit("all", ledger_target(self.model, self.store), folder)]

    def start(self, unit: Unit, run) -> dict:
        state = {"llm": run.llm, "memory": None}
        if self.store != REFERENCE:
            state["memory"] = registry.resolve(self.store, self.s.store_plugins)(
                StoreRun(run.dir, run.llm, "update-gate", self.s))
        elif self.s.raw["llm"]["batches"] and is_live(run.llm.routes):
            sent = prefetch_in_batches(run.llm, self.rows_by_set, self.n, self.s, self.log)
            self.log(f"{sent} calls sent in Message Batches (half the list price)")
        return state

    def samples(self, unit: Unit, state: dict):
        for name, rows in self.rows_by_set.items():
            for row in rows:
                yield f"{name}/{row['id']}", (name, row)
            self.log(f"{name}: {len(rows)} pairs asked")

    def ask(self, state: dict, sample) -> tuple[str, dict]:
        name, row = sample
        replicas = [f"{name}/{row['id']}/sample-{s}" for s in range(1, self.n + 1)]
        if self.store == REFERENCE:
            got = [ask_sample(state["llm"], row, max_tokens=self.s.max_tokens, replica=r) for r in replicas]
        else:
            got = [self._decided(state["memory"], row, r) for r in replicas]
        return name, {**row, "samples": got}

    def _decided(self, memory, row: Mapping, replica: str) -> dict:
        # a store sees what a memory would: the two claims, and which repeat of the pair this
        # is ("sample-2"); never the set or the pair's name, which tell the expected outcome
        decided = memory.decides_update(row["older"], row["newer"], replica.rsplit("/", 1)[-1])
        if not isinstance(decided, bool):
            raise StoreFailed(f"store {self.store}: decides_update returned {decided!r}, expected true or false")
        return {"retires": decided}

    def stops(self) -> tuple[type[BaseException], ...]:
        # a plug-in's own failure: incomplete, never a pass
        return (*super().stops(), StoreFailed, *(() if self.store == REFERENCE else (Exception,)))

    def why(self, stop: Stop) -> str:
        if isinstance(stop.exc, (*super().stops(), StoreFailed)):
            return str(stop.exc)
        return f"store {self.store} raised {type(stop.exc).__name__}: {stop.exc}"

    def score(self, unit: Unit, run, state, answers: list, stop: Stop | None) -> dict:
        asked: dict[str, list[dict]] = {name: [] for name in self.rows_by_set}
        for name, row in answers:
            asked[name].append(row)
        return {"sets": {name: self._set(name, rows) for name, rows in asked.items()},
                "incomplete": None if stop is None else self.why(stop), "invalid": run.meter.leaks() or None}

    def _set(self, name: str, rows: list[dict]) -> dict:
        score = score_set if self.store == REFERENCE else score_store_set
        complete, info = len(rows) == len(self.rows_by_set[name]), self.info[name]
        return {"file": info["file"], "sha256": info["sha256"], "registered": info["registered"],
                "heldout": info["heldout"], "complete": complete, "rows": rows,
                "scores": score(rows, heldout=info["heldout"]) if complete else None}

    def close(self, state) -> None:
        if state is not None and state["memory"] is not None:
            state["memory"].close()

    def report(self, out: Outcome) -> dict:
        (done,) = out.done
        report = {
            "suite": SUITE, "report_version": REPORT_VERSION, "urd_version": __version__, "model": out.model,
            "arm": out.arm, "purposes": out.routes.as_dict(), "mixed": out.routes.mixed, "samples_per_pair": self.n,
            "gates": list(GATES) if self.store == REFERENCE else [STORE_GATE], **done.body,
            "usage": done.run.meter.summary(), "spend": out.spend(per_unit=False), "prices": self.s.prices.as_dict(),
            "remarks": out.remarks("Scripted arm: every answer came from the package's table. It tests the harness "
                                   "and the scoring, and says nothing about any model."),
        }
        label_store(report, self.store, self.about)
        report["verdict"] = verdict(report)
        return report

    def twin(self, scratch: Settings, tmp: Path) -> UpdateGate:
        return UpdateGate(scratch, SCRIPTED_MODEL, store=self.store, samples=self.n).checked()

    def price(self, settings: Settings, routes: Routes, graph, *, profile, count) -> estimate_mod.Estimate:
        suite = SUITE if self.store == REFERENCE else f"{SUITE} ({self.store})"
        return store_estimate(settings, routes, self.store, suite, lambda: estimate_mod.update_gate(
            settings, routes, samples=self.n, profile=profile if self.store == REFERENCE else None, count=count,
            graph=graph, suite=suite))


def run_suite(
    model: str,
    settings: Settings,
    *,
    store: str = REFERENCE,
    pins: Mapping[str, str] | None = None,
    samples: int | None = None,
    yes: bool = False,
    table: ScriptedTable | None = None,
    http_client=None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    record: list | None = None,
) -> dict:
    suite = UpdateGate(settings, model, store=store, samples=samples, log=log).checked()
    return run(suite, model, settings, pins=pins, yes=yes, table=table, http_client=http_client, record=record, log=log)


def ledger_target(model: str, store: str) -> tuple[str, ...]:
    """The suite's spend ledger (the ceiling is the whole replay's)."""
    return (SUITE, model, "reference" if store == REFERENCE else f"store-{store}")


def estimate(settings: Settings, routes: Routes, *, samples: int, store: str = REFERENCE, profile: Mapping | None = None,
             count=None) -> estimate_mod.Estimate:
    """What the suite will cost for ``store``: see :mod:`urd.cost.agentmem`."""
    return suite_estimate(UpdateGate(settings, SCRIPTED_MODEL, store=store, samples=samples), settings, routes,
                          profile=profile, count=count)


def verdict(report: Mapping) -> dict:
    """Per set: the bar and the regression reading; overall: every set meeting its bar."""
    per = {
        name: None if s["scores"] is None else {"bar": s["scores"]["bar"], "regression": s["scores"]["regression"]}
        for name, s in report["sets"].items()
    }
    if report["incomplete"] or report["invalid"] or report["mixed"] or any(v is None for v in per.values()):
        met = None
    else:
        met = all(v["bar"] for v in per.values())
    return {"sets": per, "bars_met": met}


def rescore(report: Mapping) -> dict:
    """Re-score saved samples under the current gates and bars; no call."""
    out = copy.deepcopy(dict(report))
    score = score_store_set if "store" in out else score_set
    for s in out["sets"].values():
        s["scores"] = score(s["rows"], heldout=s["heldout"]) if s["complete"] else None
    out["verdict"] = verdict(out)
    out["rescored"] = {"calls": 0}
    return out


def exit_status(report: Mapping) -> int:
    return 0 if report["verdict"]["bars_met"] is True else 1
