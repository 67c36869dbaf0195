"""The rung-2 jobs, each its own process (rules/urd2.smk calls these).

Chains (urd.rung2.chains), per scale, system, variant and split:
    python -m urd.rung2 chain-consolidate --checkpoint M --sessions s3.session_a.jsonl [--prior b2/fiches.jsonl | --fresh] \
        --task t1 --system retrieval --split over --budget 120 --boundary 3 --spec S --out b3/fiches.jsonl
    python -m urd.rung2 chain-answer --checkpoint M --prompts s1.session_b.jsonl s2... s3... --fiches b3/fiches.jsonl \
        [--fresh f3/fiches.jsonl] --system retrieval --boundary 3 --spec S --out b3/raw.jsonl
    python -m urd.rung2 chain-control --checkpoint M --sessions s1.session_a.jsonl ... --prompts s1.session_b.jsonl ... --spec S --out raw.jsonl
    python -m urd.rung2 chain-judge --data s1.jsonl ... --raw b1/raw.jsonl ... [--fiches b1/fiches.jsonl ... f2/fiches.jsonl ...] --spec S --out responses.jsonl
    python -m urd.rung2 chain-summary --scale tiny --cell SYSTEM:VARIANT:SPLIT=responses.jsonl ... --control VARIANT=responses.jsonl ... \
        [--static P] --spec S --out summary.json
The Pareto sweep (urd.rung2.pareto), per scale, system and task:
    python -m urd.rung2 sweep-consolidate --checkpoint M --sessions t1.session_a.jsonl --task t1 --system retrieval --spec S --out fiches.jsonl
    python -m urd.rung2 sweep-answer --checkpoint M --prompts t1.session_b.jsonl --fiches fiches.jsonl --system retrieval --spec S --out raw.jsonl
    python -m urd.rung2 sweep-judge --task t1 --data t1.jsonl --raw raw.jsonl --fiches fiches.jsonl --spec S --out responses.jsonl
    python -m urd.rung2 sweep-summary --checkpoint M --scale tiny --cell SYSTEM:TASK=responses.jsonl ... [--static P] --spec S --out summary.json
Dose-response (urd.rung2.dose), per scale:
    python -m urd.rung2 dose --checkpoint M --scale tiny --data t1=... [--control t1=...] --artifacts artifacts/replay/tiny \
        [--static P] --spec S --out summary.json --responses responses.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_json, atomic_write_jsonl, read_jsonl, sha256_file
from ..harness.run import build_system, decode_of, dispatch, labelled, model_handle, session_b_handle


def _session_of(path: str) -> int:
    """s3.session_a.jsonl -> 3"""
    name = Path(path).name
    try:
        return int(name.split(".", 1)[0].lstrip("s"))
    except ValueError:
        raise InputError(path, "<path>", "a session file named s<k>[.<side>].jsonl") from None


def _by_session(paths: list[str], spec: dict) -> dict[int, list[dict]]:
    from .chains import select

    out = {}
    for p in paths:
        k = _session_of(p)
        eps = select(read_jsonl(p), spec)
        bad = [e for e in eps if e.get("session", k) != k]
        if bad:
            raise InputError(p, "session", k, bad[0].get("session"))
        out[k] = eps
    return out


def _model(args, spec, system_name=None, *, session_b=False):
    handle = (session_b_handle if session_b else model_handle)(args.checkpoint, spec)
    return handle, (None if system_name is None else build_system(system_name, spec, handle))


def _static(spec, args) -> dict:
    from ..core.provenance import git_commit, package_versions
    from ..harness.run import sandbox_label

    return {**json.loads(args.static), "commit": git_commit(), "packages": package_versions(),
            "sandbox": sandbox_label()}


# --- chains ---------------------------------------------------------------------------------
def cmd_chain_consolidate(args, spec):
    from ..harness import fiches
    from . import chains

    _, system = _model(args, spec, args.system)
    (k, sessions), = _by_session([args.sessions], spec).items()
    if k != args.boundary:
        raise InputError(args.sessions, "session", f"session {args.boundary} (the boundary's)", k)
    prior = fiches.read(args.prior) if args.prior else None
    if args.boundary > 1 and prior is None and not args.fresh:
        raise InputError("chain-consolidate", "--prior", f"the fiches of boundary {args.boundary - 1} (or --fresh)")
    recs = chains.consolidate(system, args.task, sessions, args.split, args.budget, spec["consolidation_factor"],
                              args.boundary, prior)
    fiches.write(args.out, labelled(recs))
    return f"wrote {len(recs)} fiches of boundary {args.boundary} to {args.out}"


def cmd_chain_answer(args, spec):
    from ..harness import fiches
    from . import chains

    _, system = _model(args, spec, args.system, session_b=True)
    sessions_b = _by_session(args.prompts, spec)
    if sorted(sessions_b) != list(range(1, args.boundary + 1)):
        raise InputError("chain-answer", "--prompts", f"the session-B views of sessions 1..{args.boundary}", sorted(sessions_b))
    fresh = fiches.read(args.fresh) if args.fresh else None
    raw = chains.answer(system, sessions_b, fiches.read(args.fiches), fresh, args.boundary, decode_of(spec))
    atomic_write_jsonl(args.out, labelled(raw))
    return f"wrote {len(raw)} replies after boundary {args.boundary} to {args.out}"


def cmd_chain_control(args, spec):
    from . import chains

    handle, _ = _model(args, spec)
    raw = chains.control(handle, _by_session(args.sessions, spec), _by_session(args.prompts, spec), decode_of(spec))
    atomic_write_jsonl(args.out, labelled(raw))
    return f"wrote {len(raw)} control replies to {args.out}"


def cmd_chain_judge(args, spec):
    from ..harness import fiches
    from . import chains

    data = _by_session(args.data, spec)
    raw = [r for p in args.raw for r in read_jsonl(p)]
    files = None
    if args.fiches:
        files = {}
        for p in args.fiches:
            recs = [rec for rec, _ in fiches.read(p)]
            if not recs:
                raise InputError(p, "<file>", "a fiche per chain", "an empty file")
            files[(recs[0]["boundary"], recs[0]["fresh"])] = recs
    system = "control" if files is None else next(iter(files.values()))[0]["system"]
    split = None if files is None else next(iter(files.values()))[0]["split"]
    out = chains.judge(spec["task"], data, raw, files, system, split, source=", ".join(args.raw))
    atomic_write_jsonl(args.out, labelled(out, "sandbox_judge"))
    return f"judged {len(out)} replies into {args.out}"


def _pairs(items: list[str], where: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, path = item.partition("=")
        if not sep:
            raise InputError(where, item, "KEY=PATH")
        out[key] = path
    return out


def cmd_chain_summary(args, spec):
    from ..tables.bootstrap import Bootstrap
    from .summaries import chain_summary

    boot = Bootstrap(**{k: spec["bootstrap"][k] for k in ("resamples", "level", "seed")})
    cells, controls = _pairs(args.cell, "--cell"), _pairs(args.control, "--control")
    summary = chain_summary(cells, controls, spec["sessions"], spec["lengths"], boot)
    summary = {"suite": summary["suite"], "scale": args.scale, **summary, "chains": spec.get("chains"),
               "budgets": spec["budgets"]}
    summary["provenance"] = {**_static(spec, args), **summary["provenance"]}
    atomic_write_json(args.out, summary)
    return f"folded {len(summary['provenance']['inputs'])} files into {args.out}"


# --- the Pareto sweep -----------------------------------------------------------------------
def cmd_sweep_consolidate(args, spec):
    from ..core.io import atomic_write_jsonl as write
    from ..harness.run import select
    from . import pareto

    _, system = _model(args, spec, args.system)
    sessions = select(read_jsonl(args.sessions), spec)
    recs = pareto.consolidate(system, args.task, sessions, spec["budgets"], spec["caps"])
    write(args.out, labelled(recs))
    bad = sum("violation" in r for r in recs)
    return f"wrote the fiches of {len(spec['budgets']) * len(spec['caps']) - bad} points ({bad} disqualified) to {args.out}"


def cmd_sweep_answer(args, spec):
    from ..harness.run import select
    from . import pareto

    _, system = _model(args, spec, args.system, session_b=True)
    points, _ = pareto.read_points(args.fiches)
    raw = pareto.answer(system, select(read_jsonl(args.prompts), spec), points, decode_of(spec))
    atomic_write_jsonl(args.out, labelled(raw))
    return f"wrote {len(raw)} replies of {len(points)} points to {args.out}"


def cmd_sweep_judge(args, spec):
    from ..harness.run import select
    from . import pareto

    points, violations = pareto.read_points(args.fiches)
    system = next((recs[0][0]["system"] for recs in points.values()), args.fiches)
    out = pareto.judge(args.task, select(read_jsonl(args.data), spec), read_jsonl(args.raw), points, system, args.raw)
    out += [{"system": system, "task": args.task, "budget_point": b, "cap_factor": c, "violation": v["violation"],
             "out_of_contract": v["out_of_contract"]} for (b, c), v in sorted(violations.items())]
    atomic_write_jsonl(args.out, labelled(out, "sandbox_judge"))
    return f"judged {len(out)} replies into {args.out}"


def cmd_sweep_summary(args, spec):
    from ..tables.bootstrap import Bootstrap
    from . import flops
    from .summaries import sweep_summary

    boot = Bootstrap(**{k: spec["bootstrap"][k] for k in ("resamples", "level", "seed")})
    cells = _pairs(args.cell, "--cell")
    out = sweep_summary(cells, flops.parameter_count(args.checkpoint), spec["budgets"], spec["caps"], boot)
    out = {"suite": out["suite"], "scale": args.scale, **out}
    out["provenance"] = {**_static(spec, args), **out["provenance"]}
    atomic_write_json(args.out, out)
    return f"folded {len(cells)} sweeps into {args.out}"


# --- dose-response --------------------------------------------------------------------------
def cmd_dose(args, spec):
    from ..backbone.adapter import Backbone
    from ..harness.run import select
    from ..session.context import Decode
    from . import dose

    data, ctrl = _pairs(args.data, "--data"), _pairs(args.control, "--control")
    episodes = {t: select(read_jsonl(p), spec) for t, p in data.items()}
    controls = {t: read_jsonl(p) for t, p in ctrl.items()}
    decode = {t: Decode(max_new_tokens=spec["decode"][t]["max_new_tokens"]) for t in episodes}
    backbone = Backbone.load(args.checkpoint, strategy=spec["strategy"])
    fig, records, served = dose.evaluate(backbone, episodes, spec["doses"], args.artifacts, spec["state_file"],
                                         controls, spec["consolidation_factor"], decode)
    out = {"suite": "urd2-dose", "scale": args.scale, "recipe": spec["recipe"], **fig,
           "method": ("each dose's entire tuned state, evaluated as the ceiling control is; dose = trained tokens / "
                      "(contract factor x transcript tokens); T2 difference = trigger rate - non-trigger rate"),
           "provenance": {**_static(spec, args), "artifacts": served,
                          "inputs": {p: sha256_file(p) for p in [*data.values(), *ctrl.values()]}}}
    atomic_write_jsonl(args.responses, labelled(records, "sandbox_judge"))
    atomic_write_json(args.out, out)
    return f"wrote {args.out} ({len(spec['doses'])} doses) and {len(records)} responses"


COMMANDS = {"chain-consolidate": cmd_chain_consolidate, "chain-answer": cmd_chain_answer,
            "chain-control": cmd_chain_control, "chain-judge": cmd_chain_judge, "chain-summary": cmd_chain_summary,
            "sweep-consolidate": cmd_sweep_consolidate, "sweep-answer": cmd_sweep_answer,
            "sweep-judge": cmd_sweep_judge, "sweep-summary": cmd_sweep_summary, "dose": cmd_dose}
MODEL = {"chain-consolidate", "chain-answer", "chain-control", "sweep-consolidate", "sweep-answer", "sweep-summary", "dose"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.rung2")
    sub = ap.add_subparsers(dest="command", required=True)
    p = {name: sub.add_parser(name) for name in COMMANDS}
    for name, sp in p.items():
        sp.add_argument("--spec", required=True, help="the slice of the config the job depends on (JSON)")
        sp.add_argument("--out", required=True)
        sp.add_argument("--verified", nargs="*", default=[], help="verify stamps: their files are re-checked before use")
        if name in MODEL:
            sp.add_argument("--checkpoint", required=True)
    for name in ("chain-consolidate", "chain-answer", "sweep-consolidate", "sweep-answer"):
        p[name].add_argument("--system", required=True)
    c = p["chain-consolidate"]
    c.add_argument("--sessions", required=True, help="session k's session-A view")
    c.add_argument("--prior", help="the fiches of boundary k-1")
    c.add_argument("--fresh", action="store_true", help="consolidate session k alone (no prior)")
    c.add_argument("--task", required=True, choices=["t1", "t2"])
    c.add_argument("--split", required=True)
    c.add_argument("--budget", type=int, default=None)
    c.add_argument("--boundary", type=int, required=True)
    a = p["chain-answer"]
    a.add_argument("--prompts", nargs="+", required=True, help="the session-B views of sessions 1..k")
    a.add_argument("--fiches", required=True)
    a.add_argument("--fresh", help="the fresh consolidation's fiches of session k")
    a.add_argument("--boundary", type=int, required=True)
    ctl = p["chain-control"]
    ctl.add_argument("--sessions", nargs="+", required=True)
    ctl.add_argument("--prompts", nargs="+", required=True)
    j = p["chain-judge"]
    j.add_argument("--data", nargs="+", required=True)
    j.add_argument("--raw", nargs="+", required=True)
    j.add_argument("--fiches", nargs="*", default=[])
    for name in ("chain-summary", "sweep-summary", "dose"):
        p[name].add_argument("--scale", required=True)
        p[name].add_argument("--static", default="{}", help="provenance known when the DAG is built (JSON)")
    p["chain-summary"].add_argument("--cell", nargs="+", required=True)
    p["chain-summary"].add_argument("--control", nargs="+", required=True)
    for name in ("sweep-consolidate",):
        p[name].add_argument("--sessions", required=True)
    for name in ("sweep-consolidate", "sweep-judge"):
        p[name].add_argument("--task", required=True, choices=["t1", "t2"])
    p["sweep-answer"].add_argument("--prompts", required=True)
    for name in ("sweep-answer", "sweep-judge"):
        p[name].add_argument("--fiches", required=True)
    p["sweep-judge"].add_argument("--data", required=True)
    p["sweep-judge"].add_argument("--raw", required=True)
    for name in ("chain-judge", "sweep-judge"):
        p[name].add_argument("--receipts", nargs="*", default=[],
                             help="the runner's receipts of the fiches and replies (urd.core.receipt)")
    p["sweep-summary"].add_argument("--cell", nargs="+", required=True, help="SYSTEM:TASK=responses.jsonl")
    d = p["dose"]
    d.add_argument("--data", nargs="+", required=True, help="TASK=PATH")
    d.add_argument("--control", nargs="*", default=[], help="TASK=PATH of the control's responses (else run here)")
    d.add_argument("--artifacts", required=True, help="artifacts/replay/{scale}")
    d.add_argument("--responses", required=True)
    return dispatch(ap.parse_args(argv), COMMANDS, "urd rung2")
