"""Tables (and the figure's data) for the two controls, from their JSON
(results/urd/{scale}/controls/ceiling.json and bits_curve.json, written by urd.controls).

Ceiling: each replay recipe answers from its entire tuned state (no budget), same harness and
judges; retention per task with its interval, and the rates behind the T2 discrimination (a
disposition installed without its condition shows as equal trigger and non-trigger rates).
Bits curve: one task, one recipe, retention at each fiche budget up to the full state.
"""

from __future__ import annotations

from .bootstrap import Bootstrap, retention_interval
from .render import Doc, pct, pct_interval, rounded, size_label
from .retention import episode_pairs
from .sources import Source


def _cell_text(cell: dict, boot: Bootstrap) -> tuple[str, object]:
    iv = retention_interval(*episode_pairs(cell), boot)
    if iv.point is None:
        return f"n/a ({iv.reason})", iv
    ci = pct_interval(iv.low, iv.high)
    return (f"{pct(iv.point)} {ci}" if ci else f"{pct(iv.point)} [CI n/a: {iv.reason}]"), iv


def ceiling_document(sources: list[Source], boot: Bootstrap, built_at: str | None) -> Doc:
    doc = Doc("urd rung 1 — control 1: the ceiling (the entire tuned state, no budget)")
    doc.para("Each replay recipe is handed its entire tuned state (top-k packing at k = all, no "
             "budget) and answers through the same harness and judges as the benchmark; the tuned "
             "states are the tuning artifacts, not tuned again. Retention B/A "
             f"[{boot.describe()}]. * = out of contract. Dose: the tuning's trained tokens over the "
             "contract's token cap, mean over episodes.")
    main, rates = [], []
    for src in sources:
        recipes = src.data["recipes"]
        for recipe in src.data.get("recipe_order") or sorted(recipes, key=lambda r: (bool(recipes[r].get("out_of_contract")), r)):
            rec = recipes[recipe]
            name = f"{recipe}{'*' if rec.get('out_of_contract') else ''}, {src.label}"
            tasks = rec["tasks"]
            main.append([name] + [_cell_text(tasks[t], boot)[0] if t in tasks else "not run" for t in ("t1", "t2")]
                        + [_dose(tasks.get(t)) for t in ("t1", "t2")] + [_fiche(tasks)])
            if "t2" in tasks:
                c = tasks["t2"]
                rates.append([name, pct(c.get("rate_trigger_B")), pct(c.get("rate_non_trigger_B")),
                              pct(c.get("rate_trigger_A")), pct(c.get("rate_non_trigger_A"))])
    doc.table(["recipe, scale", "T1 retention", "T2 retention", "T1 dose", "T2 dose", "full state (fiche bytes)"], main)
    if rates:
        doc.heading("T2 application rates behind the discrimination score")
        doc.para("Session B from the full state against the in-session control (A). Equal trigger and "
                 "non-trigger rates mean the convention is applied regardless of its condition.")
        doc.table(["recipe, scale", "trigger B", "non-trigger B", "trigger A", "non-trigger A"], rates)
    doc.heading("Provenance")
    doc.bullets([s.line() for s in sources] + [f"table built at commit {built_at or 'unknown'}"])
    return doc


def _dose(cell: dict | None) -> str:
    """Consolidation tokens declared (the tuning's trained tokens) over the contract's cap."""
    if not cell:
        return "n/a"
    declared, cap = (cell.get("declared_tokens") or {}).get("mean"), (cell.get("token_cap") or {}).get("mean")
    if declared is None or not cap:
        return "n/a"
    dose = declared / cap
    return f"{dose:.1f}× cap" if dose >= 1 else f"{dose:.2f}× cap"


def _fiche(tasks: dict) -> str:
    sizes = sorted({(c.get("fiche_bytes") or {}).get("max") for c in tasks.values()} - {None})
    return " / ".join(f"{s:,}" for s in sizes) or "n/a"


def curve_points(data: dict, boot: Bootstrap) -> list[dict]:
    """One row per budget, in budget order (full last), with the interval."""
    pts = []
    for p in data["points"]:
        iv = retention_interval(*episode_pairs(p), boot)
        pts.append({"budget_bytes": p.get("budget_bytes"), "fiche_bytes": (p.get("fiche_bytes") or {}).get("max"),
                    "retention": rounded(iv.point), "ci_low": rounded(iv.low), "ci_high": rounded(iv.high),
                    "undefined": iv.reason, "n_episodes": iv.n_episodes,
                    "out_of_contract": bool(p.get("out_of_contract"))})
    return sorted(pts, key=lambda p: (p["budget_bytes"] is None, p["budget_bytes"] or 0))


def bits_label(p: dict) -> str:
    if p["budget_bytes"] is None:
        return f"full ({p['fiche_bytes']:,} B)" if p["fiche_bytes"] else "full"
    return size_label(p["budget_bytes"])


def bits_document(sources: list[Source], boot: Bootstrap, built_at: str | None) -> Doc:
    doc = Doc("urd rung 1 — control 2: the bits curve")
    doc.para("One recipe's tuned state packed top-k by magnitude (8 bytes an entry: uint32 index, "
             "float32 value) at each fiche budget, up to the full state; same harness and judges. "
             f"KB = 1024 B, MB = 1024 KB. Retention B/A [{boot.describe()}]. * = out of contract.")
    for src in sources:
        d = src.data
        pts = curve_points(d, boot)
        star = "*" if d.get("out_of_contract") or any(p["out_of_contract"] for p in pts) else ""
        doc.heading(f"{src.label}: {d['task'].upper()}, {d['recipe']}{star}")
        header = ["fiche budget"] + [bits_label(p) for p in pts]
        ret = ["retention"] + [
            (f"{pct(p['retention'])} {pct_interval(p['ci_low'], p['ci_high'])}".strip()
             if p["retention"] is not None else f"n/a ({p['undefined']})") for p in pts]
        size = ["fiche bytes (max)"] + [f"{p['fiche_bytes']:,}" if p["fiche_bytes"] is not None else "n/a" for p in pts]
        doc.table(header, [ret, size])
    doc.heading("Provenance")
    doc.bullets([s.line() for s in sources] + [f"table built at commit {built_at or 'unknown'}"])
    return doc


def bits_series(sources: list[Source], boot: Bootstrap) -> list[dict]:
    return [{"label": f"{s.label}: {s.data['task'].upper()}, {s.data['recipe']}"
             + ("*" if s.data.get("out_of_contract") else ""), "points": curve_points(s.data, boot)}
            for s in sources]
