"""The jobs of urd rung 3, each its own process (rules/urd3.smk calls these).

    python -m urd.rung3.cli calibrate --spec S [--check | --write-manifest]   # data/urd3/<family>.jsonl and views
    python -m urd.rung3.cli consolidate --family prefs --system retrieval --split over --budget 120 \\
        --sessions data/urd3/prefs.session_a.jsonl --model scripted --spec S [--artifacts DIR] --out fiches.jsonl
    python -m urd.rung3.cli answer --family prefs --system retrieval --model scripted \\
        --prompts data/urd3/prefs.session_b.jsonl --fiches fiches.jsonl --spec S --out raw.jsonl
    python -m urd.rung3.cli control --family prefs --model scripted --sessions A --prompts B --spec S --out raw.jsonl
    python -m urd.rung3.cli summary --model scripted --data D... --raw R... --fiches F... --spec S \\
        --out summary.json --responses responses.jsonl --table table.md
    python -m urd.rung3.cli curve --model scripted --data D... --raw R... --fiches F... --spec S \\
        --out curve.json --figure curve.png

`consolidate` reads the session-A view and writes the fiches (rung 1's contract, unchanged);
`answer` builds the system afresh and reads the session-B view and the fiches, nothing else;
`summary` judges every reply against the full data, runs the code replies' asserts, and folds
the cells into summary.json (retention per system x family x budget with its interval).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_jsonl, atomic_write_text, jsonl_text, read_jsonl
from ..core.manifest import pin_or_check
from ..harness.run import build_system, dispatch, labelled

DATA_DIR = Path("data/urd3")
MANIFEST = Path("calibration/urd3/manifest.sha256")


def data_path(family: str, root: Path = DATA_DIR) -> Path:
    return root / f"{family}.jsonl"


def _family(spec: dict, name: str):
    from ..data.rung3 import family

    return family(name, spec.get("types"))


def _select(episodes: list[dict], spec: dict) -> list[dict]:
    n = spec.get("evaluate_episodes")
    return episodes[:n] if n else episodes


def cmd_calibrate(args, spec):
    from ..data import views
    from ..data.rung3.episodes import generate_episode

    files = []
    for name in spec["families"]:
        fam = _family(spec, name)
        eps = [generate_episode(spec["master_seed"], fam, i, spec) for i in range(spec["episodes"])]
        out = data_path(name, Path(args.out_dir))
        atomic_write_text(out, jsonl_text(eps))
        files.append(out)
        for side, view in views.VIEWS.items():
            atomic_write_text(views.view_path(out, side), jsonl_text(view(ep) for ep in eps))
            files.append(views.view_path(out, side))
    pin_or_check(args.manifest, files, pin=args.write_manifest, check=args.check)
    return f"wrote {len(files)} files to {args.out_dir}"


def reader_for(args, spec: dict, family, handle=None, cell: str = ""):
    """The model of session B: the scripted reader, an LLM (the live route: `spec` carries the
    agent-memory settings) or an RWKV-7 backbone on `handle`."""
    from .reader import NAME, ScriptedReader

    if args.model == NAME:
        return ScriptedReader(family)
    if "agentmem" in spec:
        from ..stores.settings import validate
        from .live import LLMReader, job_settings

        settings = job_settings(validate(spec["agentmem"], "--spec: agentmem"), args.model, cell)
        return LLMReader(args.model, family, settings, cell, yes=args.yes)
    from .backbone_reader import BackboneReader

    return BackboneReader(args.model, handle, spec["decode"][family.name])


def _handle(args, spec: dict, session_b: bool = False):
    """The metered handle the system (and, in session B, the reader) works on."""
    from .reader import NAME
    from .run import no_model

    if args.model == NAME or "agentmem" in spec:
        return no_model(args.model)
    if not args.checkpoint:
        raise InputError("command line", "--checkpoint", f"the checkpoint of model {args.model!r}")
    from ..harness.run import model_handle, session_b_handle

    return (session_b_handle if session_b else model_handle)(args.checkpoint, spec)


def _spec_system(spec: dict) -> dict:
    return {"plugins": spec.get("plugins", {}), "system_settings": spec.get("system_settings", {})}


def _writer_handle(args, spec: dict):
    """Session A's handle on the live route: an LLM writes what a system decodes (urd.rung3.live.LLMWriter),
    loaded only if the system asks the model (gzip_tail never does)."""
    from ..session.handle import ModelHandle
    from ..stores.settings import validate
    from .live import LLMWriter, job_settings

    cell = f"{args.system}/{args.family}/{args.split}"
    settings = job_settings(validate(spec["agentmem"], "--spec: agentmem"), args.model, cell, "consolidate")
    return ModelHandle(loader=lambda: LLMWriter(args.model, settings, cell, spec.get("types"), yes=args.yes))


def cmd_consolidate(args, spec):
    from ..harness import fiches
    from .run import consolidate

    handle = _writer_handle(args, spec) if "agentmem" in spec else _handle(args, spec)
    system = build_system(args.system, _spec_system(spec), handle, args.artifacts)
    sessions = _select(read_jsonl(args.sessions), spec)
    recs = consolidate(system, args.family, sessions, args.split, args.budget, spec["consolidation_factor"])
    fiches.write(args.out, labelled(recs))
    return f"wrote {len(recs)} fiches to {args.out}"


def cmd_answer(args, spec):
    from ..harness import fiches
    from .run import answer

    fam = _family(spec, args.family)
    handle = _handle(args, spec, session_b=True)  # loaded and sealed before the plug-in is imported
    cell = f"{args.system}/{args.family}/{args.split}"
    raw = answer(lambda: build_system(args.system, _spec_system(spec), handle), reader_for(args, spec, fam, handle, cell),
                 _select(read_jsonl(args.prompts), spec), fiches.read(args.fiches))
    atomic_write_jsonl(args.out, labelled(raw))
    return f"wrote {len(raw)} replies to {args.out}"


def cmd_control(args, spec):
    from .run import control

    fam = _family(spec, args.family)
    raw = control(reader_for(args, spec, fam, _handle(args, spec), f"control/{args.family}"), _select(read_jsonl(args.sessions), spec),
                  _select(read_jsonl(args.prompts), spec))
    atomic_write_jsonl(args.out, labelled(raw))
    return f"wrote {len(raw)} control replies to {args.out}"


def cmd_summary(args, spec):
    from .summary import build, table

    data = {Path(p).stem: _select(read_jsonl(p), spec) for p in args.data}
    summary, responses = build(spec, args.model, data, args.raw, args.fiches, json.loads(args.static))
    atomic_write_jsonl(args.responses, labelled(responses, "sandbox_judge"))
    atomic_write_text(args.out, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if args.table:
        atomic_write_text(args.table, table(summary))
    return f"folded {len(responses)} replies into {args.out}"


def cmd_curve(args, spec):
    from .summary import build, curve, curve_png

    data = {Path(p).stem: _select(read_jsonl(p), spec) for p in args.data}
    summary, _ = build(spec, args.model, data, args.raw, args.fiches, json.loads(args.static))
    points = curve(summary)
    atomic_write_text(args.out, json.dumps(points, indent=1, sort_keys=True) + "\n")
    curve_png(points, args.figure, args.dpi)
    return f"wrote the curve of {len(points['series'])} series to {args.out} and {args.figure}"


COMMANDS = {"calibrate": cmd_calibrate, "consolidate": cmd_consolidate, "answer": cmd_answer,
            "control": cmd_control, "summary": cmd_summary, "curve": cmd_curve}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.rung3.cli", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = {name: sub.add_parser(name) for name in COMMANDS}
    for name, sp in p.items():
        sp.add_argument("--spec", required=True, help="the urd3 section of the config, as JSON")
        sp.add_argument("--verified", nargs="*", default=[], help="verify stamps: their files are re-checked before use")
        if name != "calibrate":
            sp.add_argument("--out", required=True)
            sp.add_argument("--model", required=True,
                            help="the model of both sessions: scripted, a backbone's name or an Anthropic model")
            sp.add_argument("--checkpoint", help="the backbone's checkpoint (a model other than scripted)")
            sp.add_argument("--yes", action="store_true", help="confirm a live model's spend (else agentmem.spend.confirm_live)")
    p["calibrate"].add_argument("--out-dir", default=str(DATA_DIR))
    p["calibrate"].add_argument("--manifest", default=str(MANIFEST))
    p["calibrate"].add_argument("--check", action="store_true", help="verify the data against the manifest")
    p["calibrate"].add_argument("--write-manifest", action="store_true", help="re-pin the manifest to this data")
    for name in ("consolidate", "answer", "control"):
        p[name].add_argument("--family", required=True, choices=["prefs", "code"])
    for name in ("consolidate", "answer"):
        p[name].add_argument("--system", required=True)
    for name in ("consolidate", "control"):
        p[name].add_argument("--sessions", required=True, help="the session-A view (transcripts)")
    for name in ("answer", "control"):
        p[name].add_argument("--prompts", required=True, help="the session-B view (header, prompts)")
    p["consolidate"].add_argument("--split", required=True)
    p["consolidate"].add_argument("--budget", type=int, default=None)
    p["consolidate"].add_argument("--artifacts", help="tuning artifacts of the system's recipe (replay systems)")
    p["answer"].add_argument("--fiches", required=True)
    p["answer"].add_argument("--split", default="cell", help="the cell's split: names a live cell's ledger and work folder")
    for name in ("summary", "curve"):
        p[name].add_argument("--data", nargs="+", required=True, help="the full episodes, one file a family")
        p[name].add_argument("--raw", nargs="+", required=True,
                             help="raw replies: <root>/control/<family>/raw.jsonl, <root>/<system>/<family>/<split>/raw.jsonl")
        p[name].add_argument("--fiches", nargs="*", default=[], help="each cell's fiches.jsonl")
        p[name].add_argument("--static", default="{}", help="provenance known when the DAG is built (JSON)")
    p["curve"].add_argument("--figure", required=True, help="the PNG")
    p["curve"].add_argument("--dpi", type=int, default=150)
    p["summary"].add_argument("--responses", required=True, help="every judged reply (re-judgeable offline)")
    p["summary"].add_argument("--table", help="the table as Markdown")
    return dispatch(ap.parse_args(argv), COMMANDS, "urd3")


if __name__ == "__main__":
    sys.exit(main())
