"""``python -m urd.planting``: make the world, run, estimate, harvest, and tabulate.

Exit status: 0 done (a run stopped at its spend ceiling is done, and its report says
incomplete); 1 the run stopped at the judge's calibration or the baseline gate, or a call
failed (its report is written all the same, and says which; with ``--stopped-ok``, what the
workflow passes so that Snakemake keeps that report, 0); 2 nothing was run or written (bad
input, a live run without confirmation, a stopped report given to ``tables``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..agentmem.cli import _pin, run_guarded, token_counter, with_sandbox_label
from ..agentmem.reports import read_report
from ..core.errors import InputError
from ..core.io import atomic_write_json
from ..core.notice import notice
from ..stores import settings as settings_mod
from . import judge, render, world

EXIT_OK, EXIT_STOPPED = 0, 1  # 2 (nothing run or written): urd.agentmem.cli.run_guarded


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m urd.planting", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)

    def settings_args(p):
        g = p.add_mutually_exclusive_group()
        g.add_argument("--config", type=Path, help="YAML file with an 'agentmem' key (default: config/agentmem.yaml)")
        g.add_argument("--settings", help="config['agentmem'] as JSON (what the Snakemake rules pass)")

    p = verbs.add_parser("world", help="generate the seeded world (no model)")
    p.add_argument("--master-seed", type=int, required=True)
    p.add_argument("--output", type=Path, required=True)
    settings_args(p)

    for verb in ("run", "estimate"):
        p = verbs.add_parser(verb)
        p.add_argument("--model", required=True, help="the model every purpose runs on ('scripted': the offline tables)")
        p.add_argument("--pin", type=_pin, action="append", default=[], metavar="PURPOSE=MODEL",
                       help="run one purpose on another model (e.g. judge=...: re-judge a stored run)")
        settings_args(p)
        if verb == "run":
            p.add_argument("--world", type=Path, required=True)
            p.add_argument("--output", type=Path, required=True)
            p.add_argument("--yes", action="store_true", help="confirm a live run's spend")
            p.add_argument("--stopped-ok", action="store_true",
                           help="exit 0 when the run stops (its report says stopped, and why): the workflow keeps it")
        else:
            p.add_argument("--master-seed", type=int, required=True)
            p.add_argument("--cents", action="store_true", help="print only the estimate in whole US cents")
            p.add_argument("--count-tokens", action="store_true", help="count input tokens with the Messages API")

    p = verbs.add_parser("harvest", help="a run's candidate misjudgements (its unplanted twins' hits), for review")
    p.add_argument("report", type=Path)
    p.add_argument("--output", type=Path, required=True, help="the candidates file, to accept or reject item by item")
    settings_args(p)

    p = verbs.add_parser("accept", help="a new calibration-set version with a reviewed file's accepted candidates")
    p.add_argument("review", type=Path, help="a harvested candidates file, every decision and reviewed_by filled in")
    p.add_argument("--output", type=Path, required=True, help="the new set (registered next to the current one)")
    settings_args(p)

    p = verbs.add_parser("register", help="check a calibration set against the study's standard and register it")
    p.add_argument("set", type=Path)
    settings_args(p)

    p = verbs.add_parser("tables", help="tables and figure from reports")
    p.add_argument("reports", type=Path, nargs="+")
    p.add_argument("--receipts", nargs="*", default=[], help="the runner's receipts of the reports (urd.core.receipt)")
    for fmt in ("md", "csv", "html", "png"):
        p.add_argument(f"--{fmt}", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_guarded(_dispatch, build_parser().parse_args(argv))


def _dispatch(args) -> int:
    if args.verb == "tables":
        from ..core.receipt import vouch

        vouch(args.receipts)
        reports = [(str(p), render.tabulable(p, read_report(p, "planting"))) for p in args.reports]
        render.write_tables(reports, args.md, args.csv, args.html)
        render.write_figure(reports, args.png)
        return EXIT_OK
    s = settings_mod.load(getattr(args, "config", None), settings_json=getattr(args, "settings", None))
    p = s.raw["planting"]
    if args.verb == "world":
        n = world.write_world(args.output, args.master_seed, world.Shape.from_settings(p), world.load_roster())
        print(f"planting world: {n} events written to {args.output}")
        return EXIT_OK
    if args.verb == "register":
        digest = judge.register(args.set, p["judge"]["registry"])
        print(f"calibration set {args.set} registered in {p['judge']['registry']} (SHA-256 {digest})")
        return EXIT_OK
    if args.verb == "harvest":
        found = judge.candidates(read_report(args.report, "planting"))
        atomic_write_json(args.output, found)
        print(f"{len(found['candidates'])} candidate misjudgements written to {args.output}: set each decision to accept "
              "or reject and reviewed_by, then `python -m urd.planting accept`")
        return EXIT_OK
    if args.verb == "accept":
        cal = judge.load_set(p["judge"]["calibration_set"], p["judge"]["registry"])
        try:
            review = json.loads(args.review.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(args.review, "file", "a reviewed candidates file (JSON)", str(exc)) from None
        new = judge.harvest(review, cal, args.output, p["judge"]["registry"], where=args.review)
        print(f"calibration set v{new['version']}: {len(new['items'])} items written to {args.output} and registered "
              f"in {p['judge']['registry']}; set agentmem.planting.judge.calibration_set to use it")
        return EXIT_OK
    from .routes import routes as planting_routes

    routes = planting_routes(args.model, s, dict(args.pin))
    if args.verb == "estimate":
        count = token_counter(s) if args.count_tokens else None
        from . import suite

        est = suite.estimate(s, routes, master_seed=args.master_seed, count=count)
        print(est.cents if args.cents else est.line())
        return EXIT_OK
    from . import suite

    s = settings_mod.for_job(s, "planting", model=args.model)
    report = suite.run_suite(args.model, s, world_path=args.world, pins=dict(args.pin), yes=args.yes,
                             log=lambda line: print(line, file=sys.stderr, flush=True))
    atomic_write_json(args.output, with_sandbox_label(report))
    # the outcome and the reason: in the job's log, and where the user looks unless it completed
    outcome = f"planting on {args.model}: {report['status']}" + (
        f" at the {report['stop']['at']}: {report['stop']['why']}" if report["stop"] else "")
    if report["status"] == "complete":
        print(outcome, file=sys.stderr)
    else:
        notice(outcome)
    if report["status"] in ("complete", "incomplete") or args.stopped_ok:
        return EXIT_OK
    return EXIT_STOPPED
