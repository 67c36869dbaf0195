"""The trip-vs-move suite: the protocol of move and trip-alone runs, each on its own
store, scored by the checks, and the report of record; and rescoring a saved report."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from .. import __version__
from ..cost import agentmem as estimate_mod
from ..llm import CallFailed, CeilingReached, Meter, RequestRefused, Routes
from . import checks as checks_mod
from .cases import PROTOCOL, verify_notes
from .cases import case as case_named
from .consolidate import consolidate
from .gates import GATES
from .ingest import StepFailed, ingest_note
from .runtime import build_llm, confirm_live, fresh_run_dir, is_live, routes_for
from .scripted import ScriptedTable
from .settings import Settings
from .store import CHECKED_EVENTS, ClaimStore

REPORT_VERSION = 1
SUITE = "trip-vs-move"


def _roles(case, name: str) -> list[str]:
    return [role for role in ("home", "trip", "move") if getattr(case, role) == name]


def run_store(
    run_dir: Path,
    *,
    case_name: str,
    variant: str,
    index: int,
    settings: Settings,
    routes: Routes,
    gate: str,
    ceiling_usd: float | None,
    table: ScriptedTable | None = None,
    http_client=None,
    checks_version: int,
    record: list | None = None,
) -> dict:
    """One run: deposit the variant's notes one at a time, consolidate, check the store."""
    case = case_named(case_name)
    notes = verify_notes(settings.calibration_dir, case.variants[variant])
    replica = f"{variant}-{index}"
    meter = Meter()
    llm = build_llm(settings, routes, meter, table=table, http_client=http_client, ceiling_usd=ceiling_usd, record=record)
    incomplete = None
    reads, consolidation = [], None
    store = ClaimStore.create(fresh_run_dir(run_dir) / "store.sqlite")
    steps: list[tuple[str, Callable[[], object]]] = [
        (
            f"ingest {note.name}",
            (lambda note=note: reads.append(
                ingest_note(
                    store, llm, note,
                    read_at=settings.read_at or note.date,
                    gate=gate, limits=settings.limits, max_tokens=settings.max_tokens, replica=replica,
                )
            )),
        )
        for note in notes
    ]
    steps.append(("consolidate", lambda: consolidate(store, llm, limits=settings.limits, max_tokens=settings.max_tokens, replica=replica)))
    try:
        for label, step in steps:
            if ceiling_usd is not None and meter.spent_usd >= ceiling_usd:
                incomplete = f"stopped before {label}: measured spend US${meter.spent_usd:.4f} reached the ceiling US${ceiling_usd:g}"
                break
            with store.step():
                result = step()
            if label == "consolidate":
                consolidation = result
    except (CallFailed, CeilingReached, RequestRefused, StepFailed) as exc:
        incomplete = f"{label}: {exc}"
    rows = store.rows()
    events = store.events(CHECKED_EVENTS)
    store.close()
    checks = checks_mod.evaluate(rows, events, trip_alone=variant == "trip-alone", case=case_name, version=checks_version)
    leaks = meter.leaks()
    passed = None if (incomplete or leaks) else bool(checks["pass"])
    return {
        "variant": variant,
        "index": index,
        "passed": passed,
        "incomplete": incomplete,
        "invalid": leaks or None,
        "checks": checks,
        "claims": rows,
        "events": [{"kind": k, "payload": p} for k, p in events],
        "notes_read": [
            {
                "note": r.note,
                "claims": r.claims,
                "retired": r.retired,
                "end_dates_dropped": r.end_dates_dropped,
                "dropped_outside_bound": r.dropped,
            }
            for r in reads
        ],
        "consolidation": None
        if consolidation is None
        else {"examined": consolidation.examined, "restated": consolidation.restated, "kept_back": consolidation.kept_back},
        "usage": meter.summary(),
    }


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
    routes = routes_for(model, settings, dict(pins or {}))
    runs = dict(runs or settings.runs)
    checks_version = settings.raw["trip_vs_move"]["checks_version"]
    notes = verify_notes(settings.calibration_dir, case.notes)
    est = estimate_mod.trip_vs_move(settings, routes, case_name, gate=gate, runs=runs, profile=estimate_mod.load_profile(settings))
    log(est.line())
    confirm_live(routes, settings, yes)
    ceiling = settings.raw["spend"]["max_usd_per_run"] if is_live(routes) else None
    root = settings.work_dir / "stores" / SUITE / case_name / model / gate
    done = []
    for variant in ("move", "trip-alone"):
        for i in range(1, runs.get(variant, 0) + 1):
            run = run_store(
                root / f"{variant}-{i}",
                case_name=case_name, variant=variant, index=i, settings=settings, routes=routes,
                gate=gate, ceiling_usd=ceiling, table=table, http_client=http_client, checks_version=checks_version,
            )
            state = "INVALID" if run["invalid"] else "INCOMPLETE" if run["incomplete"] else "PASS" if run["passed"] else "FAIL"
            log(f"{variant} run {i}: {state}  US${run['usage']['spent_usd']:.4f}")
            done.append(run)
    remarks = []
    if not is_live(routes):
        remarks.append(
            "Scripted arm: every answer came from the package's table. It tests the harness, the store, "
            "the gates and the checks, and says nothing about any model."
        )
    if settings.read_at is not None:
        remarks.append(f"Every note was read at the fixed date {settings.read_at.isoformat()}, not at its own date.")
    return {
        "suite": SUITE,
        "report_version": REPORT_VERSION,
        "urd_version": __version__,
        "case": case_name,
        "case_label": case.label,
        "model": model,
        "arm": "live" if is_live(routes) else "scripted",
        "purposes": routes.as_dict(),
        "mixed": routes.mixed,
        "gate": gate,
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
            "measured_usd": round(sum(r["usage"]["spent_usd"] for r in done), 6),
            "replayed_usd": round(sum(r["usage"]["replayed_usd"] for r in done), 6),
            "ceiling_usd_per_run": ceiling,
        },
        "prices": settings.prices.as_dict(),
        "limits": settings.raw["store"],
        "remarks": remarks,
    }


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


