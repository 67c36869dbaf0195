"""Rung 3's summary: every reply judged, the code replies run, the cells folded with intervals.

Layout of the replies it reads: <root>/control/<family>/raw.jsonl (score A) and
<root>/<system>/<family>/<split>/raw.jsonl, each cell's fiches.jsonl beside its raw.jsonl. Only
the files named on the command line are read.
"""

from __future__ import annotations

from pathlib import Path

from ..core import provenance
from ..core.errors import InputError
from ..core.io import read_jsonl, sha256_file
from ..data.rung3.code import parse, source_of, task_of
from ..data.rung3.episodes import payload
from ..tables.bootstrap import Bootstrap, retention_interval
from . import correctness, score
from .reader import request_of


def cell_key(path: str | Path) -> tuple[str, str, str | None]:
    """("control", family, None) or (system, family, split), from a raw.jsonl or fiches.jsonl path."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-3] == "control":
        return ("control", parts[-2], None)
    if len(parts) < 4:
        raise InputError(path, "<path>", ".../control/<family>/raw.jsonl or .../<system>/<family>/<split>/raw.jsonl")
    return (parts[-4], parts[-3], parts[-2])


def run_code(family, episodes: list[dict], records: list[dict]) -> None:
    """Each code reply's `correct`: its function returns what its task's cases expect (run apart,
    urd.rung3.correctness)."""
    prompts = {q["id"]: q["prompt"] for ep in episodes for q in ep["queries"]}
    todo = []
    for r in records:
        task = task_of(request_of(prompts[r["query_id"]]))
        r["correct"] = False
        if task is not None and r["parsed"] and parse(r["response"]).body:
            todo.append((r, source_of(r["response"]), task))
    for (r, _, _), ok in zip(todo, correctness.run([(s, t) for _, s, t in todo])):
        r["correct"] = ok


def _fiche_stats(path: str | Path) -> dict:
    recs = read_jsonl(path)
    if not recs:
        return {}
    n = len(recs)
    return {"budget_bytes": recs[0]["budget_bytes"], "fiche_bytes_mean": sum(r["fiche_bytes"] for r in recs) / n,
            "consolidation_tokens_mean": sum(r["declared_tokens"] for r in recs) / n,
            "out_of_contract": any(r["out_of_contract"] for r in recs)}


def build(spec: dict, model: str, data: dict[str, list[dict]], raw_paths: list[str], fiche_paths: list[str],
          static: dict) -> tuple[dict, list[dict]]:
    from ..data.rung3 import family as load_family

    boot = Bootstrap(**spec["bootstrap"])
    fiches = {cell_key(p): p for p in fiche_paths}
    raws = {cell_key(p): p for p in raw_paths}
    responses, families = [], {}
    for name, episodes in sorted(data.items()):
        fam = load_family(name, spec.get("types"))
        judged = {}
        for key, path in sorted(raws.items(), key=lambda kv: (kv[0][0] != "control", kv[0])):
            if key[1] != name:
                continue
            recs = score.judge(fam, episodes, read_jsonl(path), source=str(path))
            if name == "code":
                run_code(fam, episodes, recs)
            for r in recs:
                r.update(system=key[0], split=key[2], model=model)
            judged[key] = recs
            responses += recs
        if ("control", name, None) not in judged:
            raise InputError("summary", f"control of {name}", "the control's raw replies among --raw")
        control = score.cell(fam, judged[("control", name, None)])
        a_by_ep = {e["episode"]: e["score"] for e in control["episodes"]}
        cells: dict[str, dict] = {}
        for (system, _, split), recs in judged.items():
            if system == "control":
                continue
            fig = score.cell(fam, recs)
            eps = [e for e in fig["episodes"] if e["score"] is not None and a_by_ep.get(e["episode"]) is not None]
            iv = retention_interval([a_by_ep[e["episode"]] for e in eps], [e["score"] for e in eps], boot)
            stats = _fiche_stats(fiches[(system, name, split)]) if (system, name, split) in fiches else {}
            cells.setdefault(system, {})[split] = {**stats, "score_A": control["score"], "score_B": fig["score"],
                                                   **iv.as_dict(), **{k: v for k, v in fig.items() if k != "score"}}
        payloads = [len(payload(ep).encode("utf-8")) for ep in episodes]
        families[name] = {
            "control": control,
            "payload_bytes": {"mean": sum(payloads) / len(payloads), "max": max(payloads)},
            "oracle_ceiling": {split: c["score_B"] for split, c in cells.get("oracle", {}).items()},
            "cells": cells,
            "types": {k.name: {"sides": list(k.sides), "scoped": k.scoped} for k in fam.kinds},
        }
    summary = {
        "suite": "urd rung 3",
        "model": model,
        "families": families,
        "not_run": spec.get("not_run", {}),
        "bootstrap": boot.as_dict(),
        "scores": score.__doc__.strip().split("\n\n")[1],
        "provenance": {**static, "commit": provenance.git_commit(), "packages": provenance.package_versions(),
                       "inputs": {str(p): sha256_file(p) for p in [*raw_paths, *fiche_paths]}},
    }
    return summary, responses


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def _ci(c: dict) -> str:
    if c.get("retention") is None:
        return f"n/a ({c.get('undefined')})"
    if c.get("ci_low") is None:
        return f"{_pct(c['retention'])} [CI n/a]"
    return f"{_pct(c['retention'])} [{100 * c['ci_low']:.1f}, {100 * c['ci_high']:.1f}]"


def table(summary: dict) -> str:
    """The rung-3 table as Markdown: retention per system x family x budget, stale rate, the
    per-type scores, code correctness, and the systems that got no cell."""
    out = [f"# urd rung 3 on `{summary['model']}`", ""]
    for name, fam in summary["families"].items():
        splits = sorted({s for c in fam["cells"].values() for s in c},
                        key=lambda s: next((c[s]["budget_bytes"] for c in fam["cells"].values() if s in c), 0) or 0)
        ctl = fam["control"]
        out += [f"## {name}", "",
                f"In-session control (score A): {_pct(ctl['score'])}; payload {fam['payload_bytes']['mean']:.0f} B "
                f"(max {fam['payload_bytes']['max']}); oracle ceiling: "
                + ", ".join(f"{s} {_pct(v)}" for s, v in fam["oracle_ceiling"].items()), ""]
        head = ["system", *(f"{s} retention" for s in splits), *(f"{s} stale (above habit)" for s in splits)]
        if name == "code":
            head += [f"{s} correct" for s in splits]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for system, cells in fam["cells"].items():
            row = [system + ("*" if any(c.get("out_of_contract") for c in cells.values()) else "")]
            row += [_ci(cells[s]) if s in cells else "-" for s in splits]
            row += [f"{_pct(cells[s]['stale_rate'])} ({_pct(cells[s]['stale_excess'])})" if s in cells else "-"
                    for s in splits]
            if name == "code":
                row += [_pct(cells[s].get("correct")) if s in cells else "-" for s in splits]
            out.append("| " + " | ".join(row) + " |")
        out += ["", "Per type, score B (scoped types: discrimination; others: adherence minus base rate):", ""]
        kinds = list(fam["types"])
        out += ["| system | split | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
        for system, cells in fam["cells"].items():
            for s in splits:
                if s in cells:
                    out.append(f"| {system} | {s} | " + " | ".join(_pct(cells[s]["types"].get(k)) for k in kinds) + " |")
        out.append("")
    out += ["Context, not comparable figures: the field's naturalistic memory benchmarks score with an LLM judge, "
            "and as reported on those projects' trackers the judge can decide the number (identical LoCoMo answers "
            "at 91.0 % and 35.0 % under two judge prompts; identical LongMemEval answers at 31.4 %, 48.5 % and "
            "76.3 % under three judges; PersonaMem's 4-option questions at 49 % with no context). PrefEval (ICLR "
            "2025) finds zero-shot preference following below 10 % after 10 turns for most models. Every figure "
            "above is a deterministic function of the replies in responses.jsonl.", ""]
    if summary["not_run"]:
        out += ["Systems with no cell on this model:", ""]
        out += [f"- {s}: {why}" for s, why in sorted(summary["not_run"].items())]
        out.append("")
    return "\n".join(out)


def curve(summary: dict) -> dict:
    """Retention against budget: one series a family and system, its points ordered by budget."""
    series = []
    for name, fam in summary["families"].items():
        for system, cells in fam["cells"].items():
            points = sorted(({"budget_bytes": c["budget_bytes"], "fiche_bytes": c.get("fiche_bytes_mean"),
                              "retention": c["retention"], "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                              "stale_rate": c["stale_rate"], "split": split}
                             for split, c in cells.items()), key=lambda p: p["budget_bytes"])
            series.append({"family": name, "system": system, "label": f"{name}: {system}", "points": points})
    return {"suite": "urd rung 3", "model": summary["model"], "series": series,
            "control": {n: f["control"]["score"] for n, f in summary["families"].items()},
            "payload_bytes": {n: f["payload_bytes"] for n, f in summary["families"].items()},
            "bootstrap": summary["bootstrap"], "provenance": summary["provenance"]}


def curve_png(points: dict, path, dpi: int) -> None:
    from ..tables.figures import bits_curve_png

    bits_curve_png(points["series"], path, dpi,
                   f"urd rung 3 on {points['model']}: retention B/A against the fiche budget; payload "
                   + ", ".join(f"{n} {p['mean']:.0f} B" for n, p in points["payload_bytes"].items()),
                   title=f"urd rung 3 — retention against budget on {points['model']} (95 % bootstrap CI)",
                   xlabel="fiche budget (log scale; KB = 1024 B)")
