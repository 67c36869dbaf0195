"""The cross-store table: every store through trip-vs-move (and update-gate where it decides
updates), one row per store x model x case x variant, from the saved reports alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_text, sha256_file
from ..core.provenance import NOT_BY_THE_WORKFLOW
from ..stores.registry import REFERENCE
from ..tables.render import Doc, csv_text
from ..tables.sources import sandbox_line
from .checks import evaluate_urd
from .reports import read_report
from .trip_vs_move import EVENT_CHECK

HEADER = ["store", "model", "case", "variant", "runs passed", "a home", "b trip", "i no Delhi home", "ii restatements",
          "iii trip over", "iv move kept", "urd's stricter checks", "update-gate sets at bar", "spend (US$)"]
NOT_APPLICABLE, NOT_MEASURED = "-", "not measured"

#: The checks each variant is scored by, and how a run's check record says it held.
CHECKS = {
    "trip-alone": {
        "a home": lambda c: bool(c["a_home_in_delhi"]),
        "b trip": lambda c: bool(c["b_trip_current"]),
    },
    "move": {
        "i no Delhi home": lambda c: not c["i_delhi_residence_or_flight"] and not c["i_undated_restatement"],
        "ii restatements": lambda c: None if EVENT_CHECK in c.get("not_measurable", [])
        else not c["ii_kept_back_by_winner"] and not c["ii_restatement_not_active"],
        "iii trip over": lambda c: not c["iii_trip_current"],
        "iv move kept": lambda c: bool(c["iv_move_kept"]),
    },
}


def store_of(report: Mapping) -> str:
    """A report's store: reports without a ``store`` key are the reference store's."""
    return report.get("store", {}).get("name", REFERENCE)


def _spend(report: Mapping, runs: Sequence[Mapping]) -> str:
    if report.get("store", {}).get("spend") == "not metered":
        return "not metered"
    return f"{sum(r['usage']['spent_usd'] for r in runs):.4f}"


def _check_cell(variant: str, name: str, runs: Sequence[Mapping]) -> str:
    if name not in CHECKS[variant]:
        return NOT_APPLICABLE
    stopped = [r for r in runs if r["incomplete"] or r["invalid"]]
    if stopped:  # checks read from a run that did not finish are no verdict: never held or failed
        why = stopped[0]["incomplete"] or f"invalid: {stopped[0]['invalid']}"
        return f"incomplete ({why})"
    held = [CHECKS[variant][name](r["checks"]) for r in runs]
    if any(h is None for h in held):
        return "not measurable"
    return f"{sum(held)}/{len(held)}"


def _urd_cell(case: str, variant: str, runs: Sequence[Mapping]) -> str:
    """The runs that pass the write-up's checks and urd's stricter ones (checks_urd) together, and
    the checks of urd's any run failed."""
    stopped = [r for r in runs if r["incomplete"] or r["invalid"]]
    if stopped:
        return f"incomplete ({stopped[0]['incomplete'] or 'invalid: ' + str(stopped[0]['invalid'])})"
    results = [evaluate_urd(r["claims"], [(e["kind"], e["payload"]) for e in r["events"] or []], variant=variant, case=case)
               for r in runs]
    failed = sorted({name.split("_")[0] + ("+" if "_plus_" in name else "") for x in results for name in x["failed"]})
    held = sum(bool(r["passed"]) and x["pass"] for r, x in zip(runs, results))
    return f"{held}/{len(runs)}" + (f" (failed: {', '.join(failed)})" if failed else "")


def _gate_cell(report: Mapping | None) -> str:
    if report is None:
        return NOT_MEASURED
    if report["incomplete"]:
        return f"incomplete ({report['incomplete']})"
    bars = [v["bar"] for v in report["verdict"]["sets"].values() if v is not None]
    return f"{sum(bool(b) for b in bars)} of {len(report['sets'])}"


def rows(trip_reports: Sequence[tuple[str, Mapping]], gate_reports: Sequence[tuple[str, Mapping]]) -> list[list[str]]:
    gates = {(store_of(r), r["model"]): r for _, r in gate_reports}
    out = []
    for path, rep in trip_reports:
        if rep.get("suite") != "trip-vs-move":
            raise InputError(path, "suite", "trip-vs-move", rep.get("suite"))
        if rep["checks_version"] not in (2, 3):
            raise InputError(path, "checks_version", "2 or 3 (the checks the table reads)", rep["checks_version"])
        store = store_of(rep)
        for variant in ("move", "trip-alone"):
            runs = [r for r in rep["runs"] if r["variant"] == variant]
            if not runs:
                continue
            passed = sum(1 for r in runs if r["passed"])
            stopped = sum(1 for r in runs if r["incomplete"] or r["invalid"])
            cell = f"{passed} of {len(runs)}" + (f" ({stopped} incomplete or invalid)" if stopped else "")
            checks = [_check_cell(variant, name, runs) for name in HEADER[5:11]]
            out.append([store, rep["model"], rep["case"], variant, cell, *checks, _urd_cell(rep["case"], variant, runs),
                        _gate_cell(gates.get((store, rep["model"]))), _spend(rep, runs)])
    return out


def document(trip_reports, gate_reports) -> Doc:
    doc = Doc("Agent-memory stores: trip-vs-move and update-gate")
    doc.para("Each store runs the protocol of record on its own fresh store per run: 3 move runs and 2 trip-alone runs "
             "per case, scored by the shipped checks from the store's rows and events alone. A check cell counts the "
             "runs in which it held; check ii is 'not measurable' for a store that keeps no events. 'Update-gate sets "
             "at bar' counts the four registered pair sets on which the store's update decision met the bar; "
             "'not measured' is a store without one. 'urd's stricter checks' is urd's own column beside the "
             "write-up's (src/urd/agentmem/checks_urd.py, version 1): i+ no fact of the old home left active, b+ the "
             "trip current on the day it is read (its end date after it), iii+ no ended trip shown as current, v no "
             "fact retired that says nothing of where the user lives or is; it counts the runs that pass the "
             "write-up's checks and all of these, and names the checks of urd's any run failed.")
    if any(r["arm"] == "scripted" for _, r in trip_reports):
        doc.para("Scripted arm: every model answer came from the package's table, so these rows test the harness, the "
                 "stores' rules and the checks; they say nothing about any model.")
    table = rows(trip_reports, gate_reports)
    doc.table(HEADER, table, "llll" + "r" * (len(HEADER) - 4))
    doc.heading("Sources")
    doc.bullets([f"{p} (SHA-256 {sha256_file(p)}; {sandbox_line(r.get('sandbox') or NOT_BY_THE_WORKFLOW)})"
                 for p, r in [*trip_reports, *gate_reports]])
    return doc


def write(trip_paths: Sequence[Path], gate_paths: Sequence[Path], *, md: Path, csv: Path, html: Path | None = None) -> None:
    trips = [(str(p), read_report(Path(p), "trip-vs-move")) for p in trip_paths]
    gates = [(str(p), read_report(Path(p), "update-gate")) for p in gate_paths]
    doc = document(trips, gates)
    atomic_write_text(md, doc.markdown())
    atomic_write_text(csv, csv_text(HEADER, rows(trips, gates)))
    if html is not None:
        atomic_write_text(html, doc.html())
