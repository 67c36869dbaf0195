"""The jobs of a benchmark cell, each its own process (the rules in rules/urd.smk call these).

    python -m urd.harness.run prefill --checkpoint M --sessions data/c1/t1.session_a.jsonl --spec S --out P.json
    python -m urd.harness.run control --checkpoint M --sessions A --prompts data/c1/t1.session_b.jsonl --prefill P.json --spec S --out raw.jsonl
    python -m urd.harness.run consolidate --checkpoint M --sessions A --prefill P.json --task t1 --system retrieval \
        --split over --budget 120 --spec S [--artifacts DIR] --out fiches.jsonl
    python -m urd.harness.run answer --checkpoint M --prompts B --fiches fiches.jsonl --system retrieval --spec S --out raw.jsonl
    python -m urd.harness.run judge --task t1 --data data/c1/t1.jsonl --raw raw.jsonl [--fiches fiches.jsonl] --spec S --out responses.jsonl

`consolidate` reads the session-A view (transcripts) and writes the fiches; `answer` builds the
system afresh and reads the session-B view (header, prompts) and the fiches, nothing else;
`judge` joins the raw replies with the expected answers. The spec is the slice of the validated
config a cell depends on (decoding, contract factor, episode and query limits, system settings
and plug-ins), passed by the rule as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core import provenance
from ..core.errors import UrdError
from ..core.io import atomic_write_jsonl, read_jsonl

_STARTED_AS: list[str] = []  # the label as the command found it when it started


def sandbox_label() -> str:
    """How this process was run (urd.core.provenance.sandbox_label), recorded in every fiche and
    reply it writes; read when the command starts (`main`), before any plug-in is imported: a
    plug-in runs in this process."""
    return _STARTED_AS[0] if _STARTED_AS else provenance.sandbox_label()


def labelled(records: list[dict], key: str = "sandbox") -> list[dict]:
    """Each record stamped with how this command's process was run."""
    label = sandbox_label()
    return [{**r, key: label} for r in records]


ALL_SYSTEMS = "*"


def cell_spec(config: dict, task: str, system: str | None = ALL_SYSTEMS) -> dict:
    """What a cell depends on, so a change elsewhere in the config does not rerun it: the plug-in
    entry and settings of its own ``system`` only (none for a job without one, such as the
    prefill; every system's for ``ALL_SYSTEMS``, as the controls read several), so registering
    another system's plug-in reruns nothing already built."""
    plugins, settings = config.get("plugins", {}), config.get("system_settings", {})
    if system != ALL_SYSTEMS:
        plugins = {k: v for k, v in plugins.items() if k == system}
        settings = {k: v for k, v in settings.items() if k == system}
    return {
        "consolidation_factor": config["consolidation_factor"],
        "decode": config["decode"][task],
        "evaluate_episodes": config.get("evaluate_episodes"),
        "evaluate_queries": config.get("evaluate_queries"),
        "plugins": plugins,
        "system_settings": settings,
        "strategy": config["strategy"],
    }


def select(episodes: list[dict], spec: dict) -> list[dict]:
    """The evaluated slice: the first N episodes and the first M queries of each (None = all)."""
    n, m = spec.get("evaluate_episodes"), spec.get("evaluate_queries")
    chosen = episodes[:n] if n else episodes
    return [{**ep, "queries": ep["queries"][:m]} if m and "queries" in ep else ep for ep in chosen]


def prefill_bin(index_path: str | Path) -> Path:
    """The state bytes beside a prefill index: P.json -> P.bin"""
    return Path(index_path).with_suffix(".bin")


def model_handle(checkpoint: str, spec: dict):
    """A metered handle that loads the checkpoint on first use."""
    from ..session.handle import ModelHandle

    def load():
        from ..backbone.adapter import Backbone

        return Backbone.load(checkpoint, strategy=spec["strategy"])

    return ModelHandle(loader=load)


def session_b_handle(checkpoint: str, spec: dict):
    """Session B's handle: the checkpoint loaded now, then sealed (:mod:`urd.core.hidden`: in the
    sandbox it came as a descriptor, its path unmounted) before the system's plug-in is imported,
    so the plug-in reaches the model through the metered handle only."""
    from ..backbone.adapter import Backbone
    from ..core import hidden
    from ..session.handle import ModelHandle

    with hidden.named(checkpoint) as path:
        backbone = Backbone.load(path, strategy=spec["strategy"])
    hidden.seal()
    return ModelHandle(backbone)


def decode_of(spec: dict):
    """The decoding settings of every answer (the spec's decode block)."""
    from ..session.context import Decode

    return Decode(max_new_tokens=spec["decode"]["max_new_tokens"])


def build_system(name: str, spec: dict, handle, artifacts: str | None = None):
    """The named system (built-in or plug-in) with its settings from the spec, on `handle`."""
    from ..systems import registry

    settings = spec.get("system_settings", {}).get(name, {})
    if artifacts:
        settings = {**settings, "artifacts": artifacts}
    return registry.build(name, handle, spec.get("plugins"), settings)


def cmd_prefill(args, spec):
    from ..backbone.adapter import Backbone
    from . import prefill

    sessions = select(read_jsonl(args.sessions), spec)
    backbone = Backbone.load(args.checkpoint, strategy=spec["strategy"])
    prefill.compute(backbone, sessions, prefill_bin(args.out), args.out,
                    progress=lambda ep: print(f"[prefill] episode {ep['episode']}", file=sys.stderr, flush=True))
    return f"prefilled {len(sessions)} transcripts into {args.out}"


def cmd_control(args, spec):
    from . import prefill
    from .runner import answer_control

    handle = model_handle(args.checkpoint, spec)
    sessions_a = select(read_jsonl(args.sessions), spec)
    prefill.load_into(handle, sessions_a, prefill_bin(args.prefill), args.prefill)
    raw = labelled(answer_control(handle, sessions_a, select(read_jsonl(args.prompts), spec), decode_of(spec)))
    atomic_write_jsonl(args.out, raw)
    return f"wrote {len(raw)} control replies to {args.out}"


def cmd_consolidate(args, spec):
    from . import fiches, prefill
    from .runner import consolidate_cell

    handle = model_handle(args.checkpoint, spec)
    system = build_system(args.system, spec, handle, getattr(args, "artifacts", None))
    sessions = select(read_jsonl(args.sessions), spec)
    if args.prefill:
        prefill.load_into(handle, sessions, prefill_bin(args.prefill), args.prefill)
    recs = consolidate_cell(system, args.task, sessions, args.split, args.budget, spec["consolidation_factor"])
    fiches.write(args.out, labelled(recs))
    return f"wrote {len(recs)} fiches to {args.out}"


def cmd_answer(args, spec):
    from . import fiches
    from .runner import answer_cell

    handle = session_b_handle(args.checkpoint, spec)
    system = build_system(args.system, spec, handle, getattr(args, "artifacts", None))
    raw = labelled(answer_cell(system, select(read_jsonl(args.prompts), spec), fiches.read(args.fiches), decode_of(spec)))
    atomic_write_jsonl(args.out, raw)
    return f"wrote {len(raw)} replies to {args.out}"


def cmd_judge(args, spec):
    from . import fiches
    from .runner import judge_cell

    recs = [rec for rec, _ in fiches.read(args.fiches)] if args.fiches else None
    system = recs[0]["system"] if recs else "control"
    split = recs[0]["split"] if recs else None
    out = judge_cell(args.task, select(read_jsonl(args.data), spec), read_jsonl(args.raw), recs,
                     system, split, source=args.raw)
    atomic_write_jsonl(args.out, labelled(out, "sandbox_judge"))
    return f"judged {len(out)} replies into {args.out}"


COMMANDS = {"prefill": cmd_prefill, "control": cmd_control, "consolidate": cmd_consolidate,
            "answer": cmd_answer, "judge": cmd_judge}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.harness.run")
    sub = ap.add_subparsers(dest="command", required=True)
    p = {name: sub.add_parser(name) for name in COMMANDS}
    for name, sp in p.items():
        sp.add_argument("--spec", required=True)
        sp.add_argument("--out", required=True)
        sp.add_argument("--verified", nargs="*", default=[], help="verify stamps: their files are re-checked before use")
        if name != "judge":
            sp.add_argument("--checkpoint", required=True)
    for name in ("prefill", "control", "consolidate"):
        p[name].add_argument("--sessions", required=True, help="the session-A view (transcripts)")
    for name in ("control", "answer"):
        p[name].add_argument("--prompts", required=True, help="the session-B view (header, query prompts)")
    p["control"].add_argument("--prefill", required=True, help="index of the transcript states")
    p["consolidate"].add_argument("--prefill", help="index of the transcript states")
    for name in ("consolidate", "answer"):
        p[name].add_argument("--system", required=True)
    p["consolidate"].add_argument("--task", required=True, choices=["t1", "t2"])
    p["consolidate"].add_argument("--split", required=True)
    p["consolidate"].add_argument("--budget", type=int, default=None)
    p["consolidate"].add_argument("--artifacts", help="tuning artifacts of the system's recipe (replay systems)")
    p["answer"].add_argument("--fiches", required=True)
    p["judge"].add_argument("--task", required=True, choices=["t1", "t2"])
    p["judge"].add_argument("--data", required=True, help="the full episodes (expected answers)")
    p["judge"].add_argument("--raw", required=True)
    p["judge"].add_argument("--fiches", help="the cell's fiches (absent for the control)")
    p["judge"].add_argument("--receipts", nargs="*", default=[],
                            help="the runner's receipts of the fiches and replies (urd.core.receipt)")
    return dispatch(ap.parse_args(argv), COMMANDS, "urd")


def dispatch(args, commands: dict, prog: str) -> int:
    """Run one job's command (rung 1's and rung 2's CLIs): the sandbox label read before any
    plug-in is imported, the verify stamps re-checked, the runner's receipts of the records it
    reads vouched for (a judge's), and a failure printed in one line."""
    _STARTED_AS[:] = [provenance.sandbox_label()]
    try:
        spec = json.loads(args.spec)
        from ..core.receipt import vouch
        from ..core.verify import check_stamps

        check_stamps(args.verified)
        vouch(getattr(args, "receipts", None) or [])
        message = commands[args.command](args, spec)
    except UrdError as exc:
        print(f"{prog} {args.command} FAILED: {exc}", file=sys.stderr)
        return 1
    print(message, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
