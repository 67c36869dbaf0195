"""Command line of the table jobs (one per published file group), as the rules call it.

    python -m urd.tables retention --summary tiny=results/urd/tiny/summary.json \
        --oracle results/urd/oracle.json --md ... --csv ... --html ... --caption ...
    python -m urd.tables side --summary ... --md ... --csv ... --html ... --caption ...
    python -m urd.tables retention-figure --summary tiny=... --png ... --caption ...
    python -m urd.tables ceiling --control 0.1b=results/urd/0.1b/controls/ceiling.json --md ... --html ...
    python -m urd.tables bits-curve --control 0.1b=results/urd/0.1b/controls/bits_curve.json --md ... --png ...
    python -m urd.tables urd2-chains --summary tiny=results/urd2/tiny/chains/summary.json --md ... --html ...
    python -m urd.tables urd2-pareto --summary tiny=results/urd2/tiny/pareto/summary.json --md ... --png ... (one scale a figure)
    python -m urd.tables urd2-dose --summary tiny=results/urd2/tiny/dose/summary.json --md ... --png ... (one scale a figure)

Every file goes through an atomic write; --caption writes the report caption (reStructuredText)
naming each source file's SHA-256 and the commit.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import UrdError
from ..core.io import atomic_write_text
from ..core.provenance import git_commit
from . import controls, figures, retention, side, urd2
from .bootstrap import Bootstrap
from .sources import caption_rst, load, parse_labelled


def _bootstrap(text: str | None) -> Bootstrap:
    return Bootstrap(**json.loads(text)) if text else Bootstrap()


def _write(path: str | None, text: str) -> None:
    if path:
        atomic_write_text(path, text)
        print(f"wrote {path}", file=sys.stderr)


def _short(commit: str | None) -> str:
    if not commit:
        return "unknown"
    return commit[:12] + ("-dirty" if commit.endswith("-dirty") else "")


def _order(text: str | None) -> list[str] | None:
    return [s for s in text.split(",") if s] if text else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.tables")
    ap.add_argument("what", choices=["retention", "side", "retention-figure", "ceiling", "bits-curve",
                                     "urd2-chains", "urd2-pareto", "urd2-dose"])
    ap.add_argument("--summary", action="append", default=[], help="SCALE=PATH of a summary.json (repeat)")
    ap.add_argument("--control", action="append", default=[], help="SCALE=PATH of a control's JSON (repeat)")
    ap.add_argument("--oracle", help="results/urd/oracle.json (the T1 ceiling row)")
    ap.add_argument("--systems", help="row order, comma-separated (the config's systems)")
    ap.add_argument("--omitted", default="", help="scales configured but not built, comma-separated")
    ap.add_argument("--bootstrap", help='{"resamples": N, "level": 0.95, "seed": S}')
    ap.add_argument("--dpi", type=int, default=150)
    ap.add_argument("--scale", help="retention-figure, urd2-pareto, urd2-dose: the scale to draw")
    for fmt in ("md", "csv", "html", "png", "caption"):
        ap.add_argument(f"--{fmt}")
    args = ap.parse_args(argv)
    try:
        boot = _bootstrap(args.bootstrap)
        commit = git_commit()
        summaries = parse_labelled(args.summary)
        ctrl = parse_labelled(args.control)
        if args.what == "retention":
            oracle = load(args.oracle, "oracle") if args.oracle else None
            doc, cells = retention.document(summaries, oracle, boot, commit, _order(args.systems), _order(args.omitted))
            _write(args.md, doc.markdown())
            _write(args.html, doc.html())
            _write(args.csv, retention.csv_rows(cells, summaries, boot))
            _write(args.caption, caption_rst(doc.title, "Retention B/A per scale, system, task and split, "
                                             "with the bootstrap interval of each cell and the T1 oracle ceiling.",
                                             summaries + ([oracle] if oracle else []), commit, [boot.describe()]))
        elif args.what == "side":
            doc = side.document(summaries, commit, _order(args.systems))
            _write(args.md, doc.markdown())
            _write(args.html, doc.html())
            _write(args.csv, side.csv_rows(summaries, _order(args.systems)))
            _write(args.caption, caption_rst(doc.title, "Confabulation (T1), trigger and non-trigger rates (T2), "
                                             "fiche bytes and consolidation tokens of every cell.", summaries, commit))
        elif args.what == "retention-figure":
            (src,) = [s for s in summaries if s.label == args.scale] or [None]
            if src is None:
                raise SystemExit(f"--scale {args.scale}: no --summary with that label")
            cells = retention.build_cells(src, None, boot, _order(args.systems))
            footer = f"{src.path} sha256 {src.sha256[:16]}; commit {_short(commit)}; {boot.resamples} resamples, seed {boot.seed}"
            figures.retention_png(cells, src.label, args.png, args.dpi, footer)
            print(f"wrote {args.png}", file=sys.stderr)
            _write(args.caption, caption_rst(f"Retention B/A, {src.label}", "Retention per system and task x split, "
                                             "95 % bootstrap interval as error bars; n/a where the control scores 0.",
                                             [src], commit, [boot.describe()]))
        elif args.what.startswith("urd2-"):
            _urd2(args, summaries, commit)
        elif args.what == "ceiling":
            doc = controls.ceiling_document(ctrl, boot, commit)
            _write(args.md, doc.markdown())
            _write(args.html, doc.html())
            _write(args.caption, caption_rst(doc.title, "The replay recipes answering from their entire tuned state.",
                                             ctrl, commit, [boot.describe()]))
        else:
            doc = controls.bits_document(ctrl, boot, commit)
            _write(args.md, doc.markdown())
            _write(args.html, doc.html())
            if args.png:
                footer = "; ".join(f"{s.label} sha256 {s.sha256[:16]}" for s in ctrl) + f"; commit {_short(commit)}"
                figures.bits_curve_png(controls.bits_series(ctrl, boot), args.png, args.dpi, footer)
                print(f"wrote {args.png}", file=sys.stderr)
            _write(args.caption, caption_rst(doc.title, "Retention against fiche budget, log axis.", ctrl, commit,
                                             [boot.describe()]))
    except UrdError as exc:
        print(f"urd tables FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


_URD2 = {  # command -> (document, figure or None, caption)
    "urd2-chains": (urd2.chains_document, None, "Backward and forward transfer, retention by session age and the "
                    "R matrices of every system, variant and split."),
    "urd2-pareto": (urd2.pareto_document, urd2.pareto_png, "Every point of the budget x cap sweep: score with its "
                    "interval, bits, consolidation FLOPs, and the frontier."),
    "urd2-dose": (urd2.dose_document, urd2.dose_png, "Retention per dose of the replay recipe, and the T2 trigger "
                  "and non-trigger rates behind the discrimination."),
}


def _urd2(args, summaries, commit) -> None:
    document, figure, description = _URD2[args.what]
    doc = document(summaries, commit)
    _write(args.md, doc.markdown())
    _write(args.html, doc.html())
    if args.png and figure:
        (src,) = [s for s in summaries if s.label == args.scale] or [None]
        if src is None:
            raise SystemExit(f"--scale {args.scale}: no --summary with that label")
        figure(src, args.png, args.dpi, f"{src.path} sha256 {src.sha256[:16]}; commit {_short(commit)}")
        print(f"wrote {args.png}", file=sys.stderr)
    _write(args.caption, caption_rst(doc.title, description, summaries, commit))
