"""The trip-vs-move suite: the protocol of move and trip-alone runs, each on its own
store, scored by the checks, and the report of record; and rescoring a saved report."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from .. import __version__
from ..core.io import sha256_bytes
from ..cost import agentmem as estimate_mod
from ..data.agentmem.cases import PROTOCOL, Note, verify_notes
from ..data.agentmem.cases import case as case_named
from ..llm import SCRIPTED_MODEL, Routes
from ..stores import registry
from ..stores.base import StoreFailed, StoreRun, checked_events, checked_rows
from ..stores.reference.gates import GATES
from ..stores.reference.ingest import StepFailed
from ..stores.registry import REFERENCE
from ..stores.settings import Settings
from . import checks as checks_mod
from .runtime import RunContext, is_live, label_store, store_estimate
from .scripted import ScriptedTable
from .suite import CeilingStop, Outcome, Stop, Suite, Unit, run, run_unit
from .suite import call_graph as suite_call_graph
from .suite import estimate as suite_estimate

REPORT_VERSION = 1
SUITE = "trip-vs-move"


def blind_run(case_name: str, variant: str, index: int) -> str:
    """The name a store knows its run by (its directory, its requests' replica): distinct for
    every run of a case, and naming neither the variant nor the case, which are the answer key.
    A digest, not a secret: it stops a store from reading the key by accident, as a real memory
    could not."""
    return "run-" + sha256_bytes(f"{SUITE}/{case_name}/{variant}/{index}".encode())[:10]


def blind_notes(notes) -> tuple[list[Note], dict[str, str]]:
    """The notes as a store is handed them, named by their order alone (a name like
    reader-02-moved.md would tell it the case), and the way back from those names to the real."""
    blind = [Note(f"note-{k}.md", n.date, n.text) for k, n in enumerate(notes, start=1)]
    return blind, {b.name: n.name for b, n in zip(blind, notes)}


def _named_back(rows: list[dict], names: Mapping[str, str]) -> list[dict]:
    return [{**r, "sources": [names.get(s, s) for s in r["sources"]]} for r in rows]


def _roles(case, name: str) -> list[str]:
    return [role for role in ("home", "trip", "move") if getattr(case, role) == name]


def run_store(
    ctx: RunContext,
    run_dir: Path,
    *,
    case_name: str,
    variant: str,
    index: int,
    gate: str,
    checks_version: int,
    store: str = REFERENCE,
    ledger: tuple[str, ...] = (),
) -> dict:
    """One run: a fresh store, the variant's notes deposited one at a time, consolidation, the checks.
    ``ledger`` names the run's spend ledger (the ceiling is per run)."""
    suite = TripVsMove(case_name, ctx.settings, "", store=store, gate=gate, checks_version=checks_version).checked()
    return run_unit(suite, ctx, Unit(f"{variant}-{index}", ledger, run_dir, graph=variant)).body


#: What check ii reads from a store's events; a store that keeps none cannot be held to it.
EVENT_CHECK = "ii_kept_back_by_winner"
NOT_MEASURABLE = "not measurable for this store: it keeps no events"


def _without_events(checks: dict) -> dict:
    """The move checks of a store that keeps no events: check ii's event half is reported as
    not measurable, never as a pass; the run passes on the checks that could be read."""
    out = {**checks, EVENT_CHECK: NOT_MEASURABLE}
    out["not_measurable"] = [EVENT_CHECK]
    return out


def _salvage(memory, store: str) -> tuple[list[dict], list | None]:
    """What a stopped run's store still holds (an empty store if it cannot even say)."""
    try:
        return checked_rows(memory.rows(), store), checked_events(memory.events(), store)
    except Exception:  # the run is already incomplete; its reason is the first failure
        return [], None


def verdict(runs: list[dict], *, mixed: bool, protocol: Mapping[str, int] = PROTOCOL) -> dict:
    """Runs passing per variant, and the bar: every run of the protocol passing, on one model."""
    by = {v: [r for r in runs if r["variant"] == v] for v in protocol}
    out = {
        "move_passed": sum(bool(r["passed"]) for r in by["move"]),
        "move_runs": len(by["move"]),
        "trip_alone_passed": sum(bool(r["passed"]) for r in by["trip-alone"]),
        "trip_alone_runs": len(by["trip-alone"]),
        "incomplete": sum(1 for r in runs if r["incomplete"]),
        "invalid": sum(1 for r in runs if r["invalid"]),
    }
    if any(len(by[v]) != n for v, n in protocol.items()):
        out["bar_met"], out["bar_note"] = None, "not stated: the run counts differ from the protocol's 3 move and 2 trip-alone runs"
    elif mixed:
        out["bar_met"], out["bar_note"] = None, "not stated: the purposes ran on more than one model"
    elif out["incomplete"] or out["invalid"]:
        out["bar_met"], out["bar_note"] = None, "not stated: a run was incomplete or invalid"
    else:
        out["bar_met"] = all(r["passed"] for r in runs)
        out["bar_note"] = "every run passing, every purpose on the model under test"
    return out


class TripVsMove(Suite):
    """The suite on the runner: a unit per run (its own ledger, ceiling and store), a sample per note
    and then consolidation, scored by the checks over what the store holds afterwards."""

    name, ceiling_key = SUITE, "max_usd_per_run"
    opening, finishing = "creating the store", "reading the store back"

    def __init__(self, case_name: str, settings: Settings, model: str, *, store: str = REFERENCE, gate: str | None = None,
                 runs: Mapping[str, int] | None = None, checks_version: int | None = None,
                 log: Callable[[str], None] = lambda line: None):
        self.case_name, self.case, self.s, self.model, self.store, self.log = \
            case_name, case_named(case_name), settings, model, store, log
        self.gate = gate or settings.raw["trip_vs_move"]["gate"]
        if self.gate not in GATES:
            raise ValueError(f"unknown gate {self.gate!r}; expected one of {GATES}")
        self.about = registry.describe(store, settings.store_plugins)
        self.cls = registry.resolve(store, settings.store_plugins)
        self.runs = dict(runs or settings.runs)
        self.checks_version = settings.raw["trip_vs_move"]["checks_version"] if checks_version is None else checks_version
        self.key = (case_name, self.gate, store)
        self.unpriced = f"store {store} cannot run offline on the scripted arm"

    def checked(self) -> TripVsMove:
        """The suite once the case's notes are verified: before anything is estimated, called or cleared."""
        self.case_notes = verify_notes(self.s.calibration_dir, self.case.notes)
        self.blind = {v: blind_notes(verify_notes(self.s.calibration_dir, notes)) for v, notes in self.case.variants.items()}
        return self

    def units(self) -> list[Unit]:
        root = self.s.work_dir / "stores" / SUITE / self.case_name / self.model
        root = root / self.gate if self.store == REFERENCE else root / f"store-{self.store}"
        return [Unit(f"{v}-{i}", ledger_target(self.case_name, self.model, self.gate, self.store, v, i),
                     root / blind_run(self.case_name, v, i), graph=v)
                for v in ("move", "trip-alone") for i in range(1, self.runs.get(v, 0) + 1)]

    def start(self, unit: Unit, run) -> dict:
        variant, index = _variant_index(unit)
        notes, real_name = self.blind[variant]
        memory = self.cls(StoreRun(run.dir, run.llm, blind_run(self.case_name, variant, index), self.s,
                                   {"gate": self.gate}))
        return {"memory": memory, "notes": notes, "real_name": real_name, "reads": [], "rows": None, "events": None}

    def samples(self, unit: Unit, state: dict):
        for note in state["notes"]:
            yield f"ingest {state['real_name'][note.name]}", note
        yield "consolidate", None

    def ask(self, state: dict, note: Note | None):
        if note is None:
            return state["memory"].consolidate()
        read = state["memory"].deposit(note, self.s.read_at or note.date) or {"note": note.name}
        names = state["real_name"]
        state["reads"].append({**read, "note": names.get(read.get("note"), read.get("note"))}
                              if isinstance(read, dict) else read)
        return None

    def finish(self, state: dict) -> None:
        state["rows"] = checked_rows(state["memory"].rows(), self.store)
        state["events"] = checked_events(state["memory"].events(), self.store)

    def stops(self) -> tuple[type[BaseException], ...]:
        # a plug-in's own failure: the run is incomplete, never a pass
        return (*super().stops(), StepFailed, StoreFailed, *(() if self.store == REFERENCE else (Exception,)))

    def why(self, stop: Stop) -> str:
        if isinstance(stop.exc, CeilingStop):
            return str(stop.exc)
        if isinstance(stop.exc, (*super().stops(), StepFailed, StoreFailed)):
            return f"{stop.where}: {stop.exc}"
        return f"{stop.where}: store {self.store} raised {type(stop.exc).__name__}: {stop.exc}"

    def score(self, unit: Unit, run, state, answers: list, stop: Stop | None) -> dict:
        variant, index = _variant_index(unit)
        state = state or NO_STORE
        memory, incomplete = state["memory"], None if stop is None else self.why(stop)
        rows, events = state["rows"], state["events"]
        if incomplete is not None:
            rows, events = _salvage(memory, self.store) if memory is not None else ([], None)
        rows = _named_back(rows, state["real_name"])
        checks = checks_mod.evaluate(rows, events or [], trip_alone=variant == "trip-alone", case=self.case_name,
                                     version=self.checks_version)
        if events is None and variant != "trip-alone":
            checks = _without_events(checks)
        leaks = run.meter.leaks()
        out = {
            "variant": variant, "index": index, "passed": None if (incomplete or leaks) else bool(checks["pass"]),
            "incomplete": incomplete, "invalid": leaks or None, "checks": checks, "claims": rows,
            "events": None if events is None else [{"kind": k, "payload": p} for k, p in events],
            "notes_read": state["reads"], "consolidation": answers[-1] if len(answers) > len(state["notes"]) else None,
            "usage": run.meter.summary(),
        }
        llm = run.llm
        if is_live(llm.routes):  # the run's spend ledger (a scripted run spends nothing and keeps none)
            out["ledger"] = {**llm.ledger.summary(), "billed_usd_this_run": round(llm.ledger.billed_usd_for(llm.run), 6)}
        if llm.batch_events:  # batches an earlier process left, and what became of each
            out["batches"] = llm.batch_events
        self._log_run(out)
        return out

    def _log_run(self, out: dict) -> None:
        state = "INVALID" if out["invalid"] else "INCOMPLETE" if out["incomplete"] else "PASS" if out["passed"] else "FAIL"
        self.log(f"{out['variant']} run {out['index']}: {state}  US${out['usage']['spent_usd']:.4f}  (store directory "
                 f"{blind_run(self.case_name, out['variant'], out['index'])})")

    def close(self, state) -> None:
        if state is not None:
            state["memory"].close()

    def report(self, out: Outcome) -> dict:
        s, done = self.s, [d.body for d in out.done]
        remarks = out.remarks("Scripted arm: every answer came from the package's table. It tests the harness, the "
                              "store, the gates and the checks, and says nothing about any model.")
        if s.read_at is not None:
            remarks.append(f"Every note was read at the fixed date {s.read_at.isoformat()}, not at its own date.")
        report = {
            "suite": SUITE, "report_version": REPORT_VERSION, "urd_version": __version__, "case": self.case_name,
            "case_label": self.case.label, "model": out.model, "arm": out.arm, "purposes": out.routes.as_dict(),
            "mixed": out.routes.mixed, "gate": self.gate if self.store == REFERENCE else None,
            "clock": {"mode": "fixed", "read_at": s.read_at.isoformat()} if s.read_at
            else {"mode": "note-date", "read_at": None},
            "checks_version": self.checks_version,
            "notes": [{"name": n.name, "date": n.date.isoformat(), "sha256": n.sha256, "roles": _roles(self.case, n.name)}
                      for n in self.case_notes],
            "protocol": dict(PROTOCOL), "runs": done, "verdict": verdict(done, mixed=out.routes.mixed),
            "spend": out.spend(per_unit=True), "prices": s.prices.as_dict(), "limits": s.raw["store"], "remarks": remarks,
        }
        return label_store(report, self.store, self.about)

    def twin(self, scratch: Settings, tmp: Path) -> TripVsMove:
        # one run of each variant: a variant's runs differ only in their replica
        return TripVsMove(self.case_name, scratch, SCRIPTED_MODEL, store=self.store, gate=self.gate,
                          runs={"move": 1, "trip-alone": 1}).checked()

    def price(self, settings: Settings, routes: Routes, graph, *, profile, count) -> estimate_mod.Estimate:
        suite = f"trip-vs-move {self.case_name}" + ("" if self.store == REFERENCE else f" ({self.store})")
        return store_estimate(settings, routes, self.store, suite, lambda: estimate_mod.trip_vs_move(
            settings, routes, self.case_name, runs=self.runs, profile=profile if self.store == REFERENCE else None,
            count=count, graph=graph, suite=suite))


#: The state of a run whose store could not be created: nothing read, nothing held.
NO_STORE = {"memory": None, "notes": [], "real_name": {}, "reads": [], "rows": [], "events": None}


def _variant_index(unit: Unit) -> tuple[str, int]:
    variant, index = unit.name.rsplit("-", 1)
    return variant, int(index)


def run_suite(
    case_name: str,
    model: str,
    settings: Settings,
    *,
    store: str = REFERENCE,
    gate: str | None = None,
    pins: Mapping[str, str] | None = None,
    runs: Mapping[str, int] | None = None,
    yes: bool = False,
    table: ScriptedTable | None = None,
    http_client=None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict:
    suite = TripVsMove(case_name, settings, model, store=store, gate=gate, runs=runs, log=log).checked()
    return run(suite, model, settings, pins=pins, yes=yes, table=table, http_client=http_client, log=log)


def ledger_target(case_name: str, model: str, gate: str, store: str, variant: str, index: int) -> tuple[str, ...]:
    """The spend ledger of one run (the ceiling is per run)."""
    return (SUITE, case_name, model, gate if store == REFERENCE else f"store-{store}", f"{variant}-{index}")


def ledger_targets(case_name: str, model: str, gate: str, store: str, runs: Mapping[str, int]) -> list[tuple[str, ...]]:
    return [ledger_target(case_name, model, gate, store, variant, i)
            for variant in ("move", "trip-alone") for i in range(1, runs.get(variant, 0) + 1)]


def call_graph(settings: Settings, case_name: str, variant: str, gate: str, store: str = REFERENCE) -> list:
    """Every request one run of ``store`` makes on the scripted arm (offline, free; computed once)."""
    return suite_call_graph(TripVsMove(case_name, settings, SCRIPTED_MODEL, store=store, gate=gate), settings, variant)


def estimate(settings: Settings, routes: Routes, case_name: str, *, gate: str, runs: Mapping[str, int],
             store: str = REFERENCE, profile: Mapping | None = None, count=None) -> estimate_mod.Estimate:
    """What a run will cost: see :mod:`urd.cost.agentmem`."""
    suite = TripVsMove(case_name, settings, SCRIPTED_MODEL, store=store, gate=gate, runs=runs)
    return suite_estimate(suite, settings, routes, profile=profile, count=count)


def rescore(report: Mapping, version: int) -> dict:
    """Re-run the checks over a saved report's claims and events; no store, no call."""
    out = copy.deepcopy(dict(report))
    for one in out["runs"]:
        events = [(e["kind"], e["payload"]) for e in one["events"]]
        one["checks"] = checks_mod.evaluate(
            one["claims"], events, trip_alone=one["variant"] == "trip-alone", case=out["case"], version=version
        )
        one["passed"] = None if (one["incomplete"] or one["invalid"]) else bool(one["checks"]["pass"])
    out["verdict"] = verdict(out["runs"], mixed=out["mixed"])
    out["rescored"] = {"from_checks_version": report["checks_version"], "calls": 0}
    out["checks_version"] = version
    return out


def exit_status(report: Mapping) -> int:
    return 0 if report["verdict"]["bar_met"] is True else 1


