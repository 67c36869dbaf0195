"""``python -m urd.agentmem``: run, estimate and rescore both suites.

Exit status: 0 done; 1 the bar was not met and ``--require-bar`` asked for it; 2 nothing
was run or written (bad input, a digest mismatch, or a live run without confirmation).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..core.errors import UrdError
from ..core.io import atomic_write_json
from ..core.notice import notice
from ..core.provenance import SANDBOX_ENV
from ..cost import agentmem as estimate_mod
from ..data.agentmem.cases import CASES
from ..llm.batches import BatchJournal
from ..stores import settings as settings_mod
from ..stores.reference.gates import GATES
from ..stores.registry import REFERENCE
from . import profile as profile_mod
from . import trip_vs_move, update_gate
from .reports import read_report
from .runtime import NotConfirmed, routes_for

EXIT_OK, EXIT_BAR, EXIT_REFUSED = 0, 1, 2


def _pin(text: str) -> tuple[str, str]:
    purpose, sep, model = text.partition("=")
    if not sep or not purpose.strip() or not model.strip():
        raise argparse.ArgumentTypeError(f"--pin takes PURPOSE=MODEL, not {text!r}")
    return purpose.strip(), model.strip()


def _settings_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--config", type=Path, help="YAML file with an 'agentmem' key (default: config/agentmem.yaml)")
    g.add_argument("--settings", help="config['agentmem'] as JSON (what the Snakemake rules pass)")
    p.add_argument("--read-at", help="read every note at this YYYY-MM-DD instead of at its own date")


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=REFERENCE,
                   help="the store under test: a built-in or an agentmem.stores.plugins name (default: reference)")
    p.add_argument("--model", required=True, help="the model every purpose runs on ('scripted': the offline table)")
    p.add_argument("--pin", type=_pin, action="append", default=[], metavar="PURPOSE=MODEL", help="run one purpose on another model")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m urd.agentmem", description=__doc__.splitlines()[0])
    suites = parser.add_subparsers(dest="suite", required=True)

    tvm = suites.add_parser("trip-vs-move", help="a value that changes, and one that does not").add_subparsers(dest="verb", required=True)
    for verb in ("run", "estimate"):
        p = tvm.add_parser(verb)
        p.add_argument("--case", choices=sorted(CASES), default="reader")
        p.add_argument("--gate", choices=GATES, help="the update gate (default: agentmem.trip_vs_move.gate)")
        _model_args(p)
        _settings_args(p)
        _verb_args(p, verb, "exit 1 unless the bar is met")
    p = tvm.add_parser("rescore", help="re-run the checks over a saved report; no call")
    p.add_argument("report", type=Path)
    p.add_argument("--checks-version", type=int, required=True)
    p.add_argument("--output", type=Path, required=True)

    ug = suites.add_parser("update-gate", help="the registered pair sets under three gates").add_subparsers(dest="verb", required=True)
    for verb in ("run", "estimate"):
        p = ug.add_parser(verb)
        _model_args(p)
        _settings_args(p)
        p.add_argument("--samples", type=int, help="samples per pair (default: agentmem.update_gate.samples)")
        _verb_args(p, verb, "exit 1 unless every set meets its bar")
    p = ug.add_parser("rescore", help="re-score a saved report's samples; no call")
    p.add_argument("report", type=Path)
    p.add_argument("--output", type=Path, required=True)
    p = suites.add_parser("table", help="the cross-store table from saved reports; no call")
    p.add_argument("--trip-vs-move", type=Path, nargs="+", required=True, metavar="REPORT")
    p.add_argument("--update-gate", type=Path, nargs="*", default=[], metavar="REPORT")
    p.add_argument("--md", type=Path, required=True)
    p.add_argument("--csv", type=Path, required=True)
    p.add_argument("--html", type=Path)
    p.add_argument("--receipts", nargs="*", default=[], help="the runner's receipts of the reports (urd.core.receipt)")
    bt = suites.add_parser("batches", help="Message Batches that runs left in progress").add_subparsers(dest="verb", required=True)
    p = bt.add_parser("list", help="every batch not read to its end, with its journal")
    _settings_args(p)
    p = bt.add_parser("cancel", help="cancel a batch; what it already did is kept (billed) and settled")
    p.add_argument("batch_id")
    _settings_args(p)
    p = suites.add_parser("profile", help="record a live report's measured usage for later estimates")
    p.add_argument("reports", type=Path, nargs="+")
    _settings_args(p)
    return parser


def _verb_args(p, verb: str, bar_help: str) -> None:
    """What `run` and `estimate` take beyond the model and settings, for either suite."""
    if verb == "run":
        p.add_argument("--output", type=Path, required=True)
        p.add_argument("--yes", action="store_true", help="confirm a live run's spend")
        p.add_argument("--require-bar", action="store_true", help=bar_help)
    else:
        p.add_argument("--cents", action="store_true", help="print only the estimate in whole US cents")
        p.add_argument("--count-tokens", action="store_true",
                       help="count each request's input tokens with the Messages API (needs ANTHROPIC_API_KEY; free)")


def _settings(args) -> settings_mod.Settings:
    s = settings_mod.load(args.config, settings_json=args.settings)
    if args.read_at:
        s = settings_mod.with_overrides(s, {"store.read_at": args.read_at})
    return s


def with_sandbox_label(report: dict) -> dict:
    """A report a workflow job wrote says whether that job ran in the sandbox (urd.workflow.sandbox);
    one written by hand carries no label, so its bytes are the suite's alone."""
    label = os.environ.get(SANDBOX_ENV)
    return {**report, "sandbox": label} if label else report


def main(argv: list[str] | None = None) -> int:
    return run_guarded(_dispatch, build_parser().parse_args(argv))


def run_guarded(dispatch, args) -> int:
    """`dispatch(args)`, with a refusal or an urd error as one line on standard error and exit 2."""
    try:
        return dispatch(args)
    except NotConfirmed as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_REFUSED


def _dispatch(args) -> int:
    if args.suite == "table":
        from ..core.receipt import vouch
        from . import table

        vouch(args.receipts)
        table.write(args.trip_vs_move, args.update_gate, md=args.md, csv=args.csv, html=args.html)
        print(f"stores table written to {args.md} and {args.csv}")
        return EXIT_OK
    if args.suite == "batches":
        return _batches(args)
    if args.suite == "profile":
        s = _settings(args)
        path = s.calibration_dir / estimate_mod.PROFILE_FILE
        merged = estimate_mod.load_profile(s)
        for report_path in args.reports:
            report = json.loads(report_path.read_text(encoding="utf-8"))
            merged = profile_mod.merge(merged, report, report_path.name)
        atomic_write_json(path, merged)
        print(f"usage profile written to {path}")
        return EXIT_OK
    if args.verb == "rescore":
        if args.suite == "trip-vs-move":
            report = trip_vs_move.rescore(read_report(args.report, "trip-vs-move"), args.checks_version)
            print(f"re-scored under checks version {args.checks_version}: {report['verdict']}")
        else:
            report = update_gate.rescore(read_report(args.report, "update-gate"))
            print(f"re-scored: {report['verdict']}")
        atomic_write_json(args.output, report)
        return EXIT_OK
    s = _settings(args)
    pins = dict(args.pin)
    if args.verb == "estimate":
        routes = routes_for(args.model, s, pins)
        profile = {} if args.count_tokens else estimate_mod.load_profile(s)
        count = token_counter(s) if args.count_tokens else None
        if args.suite == "trip-vs-move":
            est = trip_vs_move.estimate(s, routes, args.case, gate=args.gate or s.raw["trip_vs_move"]["gate"], runs=s.runs,
                                        store=args.store, profile=profile, count=count)
        else:
            est = update_gate.estimate(s, routes, samples=args.samples or s.raw["update_gate"]["samples"], store=args.store,
                                       profile=profile, count=count)
        print(est.cents if args.cents else est.line())
        return EXIT_OK
    if args.suite == "trip-vs-move":
        s = settings_mod.for_job(s, args.suite, case=args.case, store=args.store, model=args.model)
        report = trip_vs_move.run_suite(args.case, args.model, s, store=args.store, gate=args.gate, pins=pins, yes=args.yes)
        status = trip_vs_move.exit_status(report)
    else:
        s = settings_mod.for_job(s, args.suite, store=args.store, model=args.model)
        report = update_gate.run_suite(args.model, s, store=args.store, pins=pins, samples=args.samples, yes=args.yes)
        status = update_gate.exit_status(report)
    atomic_write_json(args.output, with_sandbox_label(report))
    print(f"{args.suite} on {args.model}: {report['verdict']}")
    for line in incomplete_lines(args.suite, args.model, report):  # why, one line each, where the user looks
        notice(line)
    return status if args.require_bar else EXIT_OK


def incomplete_lines(suite: str, model: str, report: dict) -> list[str]:
    """One line for each reason a report states no verdict: suite, store, model, where, why."""
    from .table import store_of

    store = store_of(report)
    head = f"{suite} on {model}, store {store}: incomplete"
    if suite == "trip-vs-move":
        return [f"{head}: run {r['variant']}-{r['index']}: {r['incomplete']}" for r in report["runs"] if r["incomplete"]]
    return [f"{head}: {report['incomplete']}"] if report.get("incomplete") else []


def _batches(args) -> int:
    from .runtime import BATCH_DIR, batch_llm

    s = settings_mod.load(args.config, settings_json=args.settings)
    # each job keeps its own journal in its own work folder (settings.job_folder)
    journals = [BatchJournal(p) for p in sorted(s.work_dir.rglob(BATCH_DIR)) if p.is_dir()]
    if args.verb == "list":
        left = [r for journal in journals for r in journal.open_records()]
        for record in left:
            print(f"{record['id'] or '(id never came back)'}  {record['state']}  {len(record['items'])} requests  "
                  f"ledger {record['ledger']}  journal {record['journal']}")
        if not left:
            print(f"no message batch left in progress under {s.work_dir}")
        return EXIT_OK
    journal = next((j for j in journals if j.path(args.batch_id).exists()), BatchJournal(s.work_dir / BATCH_DIR))
    record = {**journal.find(args.batch_id), "journal": str(journal.path(args.batch_id))}
    if record["state"] not in ("pending", "in_progress"):
        print(f"message batch {args.batch_id} is already {record['state']}; nothing to cancel")
        return EXIT_OK
    s = settings_mod.with_overrides(s, {"work_dir": str(journal.root.parent)})  # the job's own folder
    llm = batch_llm(s, record)
    llm.cancel(record, poll_s=s.raw["llm"]["batch_poll_s"])
    print(f"message batch {args.batch_id} cancelled; what it had done is in the replay cache and the ledger "
          f"({record['ledger']}: US${llm.ledger.billed_usd:.4f} billed)")
    return EXIT_OK


def token_counter(settings, http_client=None):
    """The Messages API's token counter, each distinct request counted once."""
    from ..llm.anthropic_backend import AnthropicBackend

    llm_cfg = settings.raw["llm"]
    backend = AnthropicBackend(max_retries=llm_cfg["max_retries"], timeout_s=llm_cfg["timeout_s"], http_client=http_client)
    seen: dict[tuple, int] = {}

    def count(model, request):
        key = (model, request.system, request.user)
        if key not in seen:
            seen[key] = backend.count_tokens(model, request)
        return seen[key]

    return count
