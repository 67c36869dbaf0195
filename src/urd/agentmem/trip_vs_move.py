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
from ..llm import SCRIPTED_MODEL, CallFailed, CeilingReached, RequestRefused, Routes
from ..stores import registry
from ..stores.base import StoreFailed, StoreRun, checked_events, checked_rows
from ..stores.reference.gates import GATES
from ..stores.reference.ingest import StepFailed
from ..stores.registry import REFERENCE
from ..stores.settings import Settings
from . import checks as checks_mod
from .runtime import FREE_REMARK, RunContext, label_store, open_run, routes_for, scripted_calls, store_estimate
from .scripted import ScriptedTable

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
    settings, ceiling_usd = ctx.settings, ctx.ceiling_usd
    case = case_named(case_name)
    notes, real_name = blind_notes(verify_notes(settings.calibration_dir, case.variants[variant]))
    replica = blind_run(case_name, variant, index)
    cls = registry.resolve(store, settings.store_plugins)
    opened = ctx.open(ledger, run_dir)
    llm, meter = opened.llm, opened.meter
    incomplete = None
    reads, consolidation = [], None
    memory = None
    run = StoreRun(opened.dir, llm, replica, settings, {"gate": gate})
    def ingest(note: Note) -> None:
        read = memory.deposit(note, settings.read_at or note.date) or {"note": note.name}
        reads.append({**read, "note": real_name.get(read.get("note"), read.get("note"))} if isinstance(read, dict) else read)

    steps: list[tuple[str, Callable[[], object]]] = [
        (f"ingest {real_name[note.name]}", lambda note=note: ingest(note)) for note in notes
    ]
    steps.append(("consolidate", lambda: memory.consolidate()))
    label = "creating the store"
    try:
        memory = cls(run)
        for label, step in steps:
            if ceiling_usd is not None and llm.committed_usd >= ceiling_usd and llm.committed_usd > 0:
                incomplete = (f"stopped before {label}: committed spend US${llm.committed_usd:.4f} reached the ceiling "
                              f"US${ceiling_usd:g}")
                break
            result = step()
            if label == "consolidate":
                consolidation = result
        label = "reading the store back"
        rows = checked_rows(memory.rows(), store)
        events = checked_events(memory.events(), store)
    except (CallFailed, CeilingReached, RequestRefused, StepFailed, StoreFailed) as exc:
        incomplete = f"{label}: {exc}"
    except Exception as exc:  # a plug-in's own failure: the run is incomplete, never a pass
        if store == REFERENCE:
            raise
        incomplete = f"{label}: store {store} raised {type(exc).__name__}: {exc}"
    if incomplete is not None:
        rows, events = _salvage(memory, store) if memory is not None else ([], None)
    rows = _named_back(rows, real_name)
    if memory is not None:
        memory.close()
    checks = checks_mod.evaluate(rows, events or [], trip_alone=variant == "trip-alone", case=case_name, version=checks_version)
    if events is None and variant != "trip-alone":
        checks = _without_events(checks)
    leaks = meter.leaks()
    passed = None if (incomplete or leaks) else bool(checks["pass"])
    out = {
        "variant": variant,
        "index": index,
        "passed": passed,
        "incomplete": incomplete,
        "invalid": leaks or None,
        "checks": checks,
        "claims": rows,
        "events": None if events is None else [{"kind": k, "payload": p} for k, p in events],
        "notes_read": reads,
        "consolidation": consolidation,
        "usage": meter.summary(),
    }
    if ctx.live:  # the run's spend ledger (a scripted run spends nothing and keeps none)
        out["ledger"] = {**llm.ledger.summary(), "billed_usd_this_run": round(llm.ledger.billed_usd_for(llm.run), 6)}
    if llm.batch_events:  # batches an earlier process left, and what became of each
        out["batches"] = llm.batch_events
    return out


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
    case = case_named(case_name)
    gate = gate or settings.raw["trip_vs_move"]["gate"]
    if gate not in GATES:
        raise ValueError(f"unknown gate {gate!r}; expected one of {GATES}")
    about = registry.describe(store, settings.store_plugins)
    routes = routes_for(model, settings, dict(pins or {}))
    runs = dict(runs or settings.runs)
    checks_version = settings.raw["trip_vs_move"]["checks_version"]
    notes = verify_notes(settings.calibration_dir, case.notes)
    est = estimate(settings, routes, case_name, gate=gate, runs=runs, store=store, profile=estimate_mod.load_profile(settings))
    ctx = open_run(settings, routes, estimate=est, ceiling_usd=settings.raw["spend"]["max_usd_per_run"], yes=yes,
                   table=table, http_client=http_client, log=log)
    ceiling = ctx.ceiling_usd
    root = settings.work_dir / "stores" / SUITE / case_name / model
    root = root / gate if store == REFERENCE else root / f"store-{store}"
    done = []
    for variant in ("move", "trip-alone"):
        for i in range(1, runs.get(variant, 0) + 1):
            run = run_store(
                ctx, root / blind_run(case_name, variant, i),
                case_name=case_name, variant=variant, index=i, gate=gate, checks_version=checks_version,
                store=store, ledger=ledger_target(case_name, model, gate, store, variant, i),
            )
            state = "INVALID" if run["invalid"] else "INCOMPLETE" if run["incomplete"] else "PASS" if run["passed"] else "FAIL"
            log(f"{variant} run {i}: {state}  US${run['usage']['spent_usd']:.4f}  (store directory "
                f"{blind_run(case_name, variant, i)})")
            done.append(run)
    remarks = []
    if not ctx.live:
        remarks.append(
            "Scripted arm: every answer came from the package's table. It tests the harness, the store, "
            "the gates and the checks, and says nothing about any model."
        )
    if ceiling == 0.0:
        remarks.append(FREE_REMARK)
    if settings.read_at is not None:
        remarks.append(f"Every note was read at the fixed date {settings.read_at.isoformat()}, not at its own date.")
    report = {
        "suite": SUITE,
        "report_version": REPORT_VERSION,
        "urd_version": __version__,
        "case": case_name,
        "case_label": case.label,
        "model": model,
        "arm": "live" if ctx.live else "scripted",
        "purposes": routes.as_dict(),
        "mixed": routes.mixed,
        "gate": gate if store == REFERENCE else None,
        "clock": {"mode": "fixed", "read_at": settings.read_at.isoformat()}
        if settings.read_at
        else {"mode": "note-date", "read_at": None},
        "checks_version": checks_version,
        "notes": [{"name": n.name, "date": n.date.isoformat(), "sha256": n.sha256, "roles": _roles(case, n.name)} for n in notes],
        "protocol": dict(PROTOCOL),
        "runs": done,
        "verdict": verdict(done, mixed=routes.mixed),
        "spend": {
            "estimate": est.as_dict(),
            # what the runs were billed, repeats and replies never used included (live); the
            # replies the numbers rest on are used_usd
            "measured_usd": round(sum(r["ledger"]["billed_usd_this_run"] if "ledger" in r else r["usage"]["spent_usd"]
                                      for r in done), 6),
            "used_usd": round(sum(r["usage"]["spent_usd"] for r in done), 6),
            "replayed_usd": round(sum(r["usage"]["replayed_usd"] for r in done), 6),
            "ceiling_usd_per_run": ceiling,
            **({"ledger_usd": round(sum(r["ledger"]["billed_usd"] for r in done), 6)} if ctx.live else {}),
        },
        "prices": settings.prices.as_dict(),
        "limits": settings.raw["store"],
        "remarks": remarks,
    }
    return label_store(report, store, about)


def ledger_target(case_name: str, model: str, gate: str, store: str, variant: str, index: int) -> tuple[str, ...]:
    """The spend ledger of one run (the ceiling is per run)."""
    return (SUITE, case_name, model, gate if store == REFERENCE else f"store-{store}", f"{variant}-{index}")


def ledger_targets(case_name: str, model: str, gate: str, store: str, runs: Mapping[str, int]) -> list[tuple[str, ...]]:
    return [ledger_target(case_name, model, gate, store, variant, i)
            for variant in ("move", "trip-alone") for i in range(1, runs.get(variant, 0) + 1)]


def call_graph(settings: Settings, case_name: str, variant: str, gate: str, store: str = REFERENCE) -> list:
    """Every request one run of ``store`` makes on the scripted arm (offline, free; computed once)."""
    def run(scratch, tmp, record):
        ctx = open_run(scratch, routes_for(SCRIPTED_MODEL, scratch), ceiling_usd=None, record=record)
        return run_store(ctx, tmp / "run", case_name=case_name, variant=variant, index=1, gate=gate,
                         checks_version=scratch.raw["trip_vs_move"]["checks_version"], store=store)["incomplete"]

    return scripted_calls(settings, (SUITE, case_name, variant, gate, store), run,
                          stopped=f"store {store} cannot run offline on the scripted arm")


def estimate(settings: Settings, routes: Routes, case_name: str, *, gate: str, runs: Mapping[str, int],
             store: str = REFERENCE, profile: Mapping | None = None, count=None) -> estimate_mod.Estimate:
    """What a run will cost: see :mod:`urd.cost.agentmem`."""
    suite = f"trip-vs-move {case_name}" + ("" if store == REFERENCE else f" ({store})")
    return store_estimate(settings, routes, store, suite, lambda: estimate_mod.trip_vs_move(
        settings, routes, case_name, runs=runs, profile=profile if store == REFERENCE else None, count=count,
        graph=lambda variant: call_graph(settings, case_name, variant, gate, store), suite=suite))


def rescore(report: Mapping, version: int) -> dict:
    """Re-run the checks over a saved report's claims and events; no store, no call."""
    out = copy.deepcopy(dict(report))
    for run in out["runs"]:
        events = [(e["kind"], e["payload"]) for e in run["events"]]
        run["checks"] = checks_mod.evaluate(
            run["claims"], events, trip_alone=run["variant"] == "trip-alone", case=out["case"], version=version
        )
        run["passed"] = None if (run["incomplete"] or run["invalid"]) else bool(run["checks"]["pass"])
    out["verdict"] = verdict(out["runs"], mixed=out["mixed"])
    out["rescored"] = {"from_checks_version": report["checks_version"], "calls": 0}
    out["checks_version"] = version
    return out


def exit_status(report: Mapping) -> int:
    return 0 if report["verdict"]["bar_met"] is True else 1


