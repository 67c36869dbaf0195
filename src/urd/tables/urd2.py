"""Rung-2 tables and figures, from results/urd2/{scale}/{chains,pareto,dose}/summary.json.

Chains: backward and forward transfer at each reported length with their intervals, retention
by session age, and every R matrix. Pareto: every sweep point with its interval, bits, FLOPs,
status and frontier mark; the figure draws score against bits (FLOPs as the marker's area) per
task. Dose: retention per dose and task, and for T2 the trigger rate, the non-trigger rate and
their difference; one figure per scale. Every point of a figure is labelled without covering a
tick label or another label (urd.tables.labels).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from .figures import COLORS, STYLE, _footer, save_png
from .labels import place_labels
from .render import Doc, pct, size_label
from .sources import Source


def _num(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:+.{digits}f}" if x < 0 else f"{x:.{digits}f}"


def _iv(d: dict | None) -> str:
    if not d or d.get("mean") is None:
        return "n/a"
    return f"{_num(d['mean'])} [{_num(d['ci_low'])}, {_num(d['ci_high'])}]"


def _flops(x) -> str:
    return "n/a" if x is None else "0" if x == 0 else f"{x:.2e}"


def _provenance(doc: Doc, sources: list[Source], built_at: str | None) -> None:
    doc.heading("Provenance")
    doc.bullets([s.line() for s in sources] + [f"table built at commit {built_at or 'unknown'}"])


# --- chains ---------------------------------------------------------------------------------
def chains_document(sources: list[Source], built_at: str | None) -> Doc:
    doc = Doc("urd rung 2 — session chains: backward transfer, forward transfer, retention by age")
    if sources:
        m = sources[0].data["method"]
        doc.bullets([m["R"], m["backward"], m["forward"], m["by_age"]])
    for src in sources:
        d = src.data
        lengths = d["lengths"]
        doc.heading(f"{src.label}: {d['sessions']} sessions, {d.get('chains') or 'all'} chains")
        header = ["system", "variant", "split"] + [f"BWT({n})" for n in lengths] + [f"FWT({n})" for n in lengths] + [
            "age 1 (relative)"]
        rows = []
        for system in sorted(d["systems"]):
            for variant in sorted(d["systems"][system]):
                for split, c in sorted(d["systems"][system][variant].items()):
                    t = c["transfer"]
                    rows.append([system + ("*" if c["out_of_contract"] else ""), variant, split]
                                + [_iv(t[str(n)]["backward"]) for n in lengths]
                                + [_iv(t[str(n)]["forward"]) for n in lengths]
                                + [pct(c["by_age"].get("1", {}).get("relative"))])
        doc.table(header, rows, "lll" + "r" * (len(header) - 3))
        doc.heading(f"{src.label}: R[k][j] (rows: after boundary k; columns: session j; A: in-session control)", 3)
        for system in sorted(d["systems"]):
            for variant in sorted(d["systems"][system]):
                for split, c in sorted(d["systems"][system][variant].items()):
                    n = c["sessions"]
                    doc.para(f"{system} / {variant} / {split} ({c['budget_bytes']} B a session)")
                    rows = [[f"k={k + 1}"] + [_num(c["R"][k][j]) if c["R"][k][j] is not None else "" for j in range(n)]
                            for k in range(n)]
                    rows.append(["A"] + [_num(x) for x in c["control_A"]])
                    rows.append(["fresh"] + ["" if x is None else _num(x) for x in c["fresh"]])
                    doc.table(["", *[f"j={j + 1}" for j in range(n)]], rows)
    _provenance(doc, sources, built_at)
    return doc


# --- pareto ---------------------------------------------------------------------------------
def pareto_document(sources: list[Source], built_at: str | None) -> Doc:
    doc = Doc("urd rung 2 — the Pareto frontier of score x bits x consolidation FLOPs")
    if sources:
        d = sources[0].data
        doc.bullets([d["flops_formula"], d["dominance"],
                     "score: T1 recall on seen keys, T2 discrimination; mean over episodes, 95 % percentile "
                     "bootstrap interval over episodes; bits: 8 x the mean fiche bytes that crossed",
                     "disqualified: the system broke the contract at that cap (the BudgetViolation is quoted)"])
    for src in sources:
        for task, t in sorted(src.data["tasks"].items()):
            doc.heading(f"{src.label}, {task.upper()} (N = {src.data['n_params']:,} parameters)")
            rows = []
            for p in t["points"]:
                score = "—" if p["status"] != "ok" else (
                    f"{_num(p['score'])} [{_num(p['ci_low'])}, {_num(p['ci_high'])}]")
                rows.append([p["system"] + ("*" if p.get("out_of_contract") else ""), size_label(p["budget_bytes"]),
                             f"{p['cap_factor']}x", score, "—" if p["bits"] is None else f"{p['bits']:.0f}",
                             _flops(p["flops"]), "yes" if p.get("frontier") else "",
                             p["status"] if p["status"] == "ok" else f"disqualified: {p['reason']}"])
            doc.table(["system", "budget", "cap", "score [95 % CI]", "bits", "FLOPs", "frontier", "status"], rows,
                      "lrrrrrll")
    _provenance(doc, sources, built_at)
    return doc


def _grouped(points: list[dict]) -> list[tuple[float, float, float, list[dict]]]:
    """Points at the same (bits, score) drawn and labelled once: (x, y, largest FLOPs, points)."""
    groups: dict[tuple[float, float], list[dict]] = {}
    for p in points:
        if p["status"] == "ok" and p["score"] is not None:
            groups.setdefault((p["bits"], p["score"]), []).append(p)
    return [(x, y, max(q["flops"] for q in ps), ps) for (x, y), ps in sorted(groups.items())]


def _group_label(ps: list[dict]) -> str:
    systems = sorted({p["system"] for p in ps})
    if len(systems) > 1:
        return f"{systems[0]} +{len(systems) - 1}"
    budgets = sorted({p["budget_bytes"] for p in ps})
    caps = sorted({p["cap_factor"] for p in ps})
    b = size_label(budgets[0]) + (f"–{size_label(budgets[-1])}" if len(budgets) > 1 else "")
    c = f"{caps[0]}x" if len(caps) == 1 else f"{caps[0]}–{caps[-1]}x"
    return f"{systems[0]} {b} @{c}"


def pareto_figure(src: Source, dpi: int, footer: str):
    """(fig, axes, labels): score against bits per task, marker area by FLOPs, frontier ringed."""
    tasks = sorted(src.data["tasks"])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(tasks), figsize=(5.2 * len(tasks), 4.4), dpi=dpi, squeeze=False)
        axes = axes[0]
        systems = sorted({p["system"] for t in tasks for p in src.data["tasks"][t]["points"]})
        color = {s: COLORS[i % len(COLORS)] for i, s in enumerate(systems)}
        biggest = max([p["flops"] or 0 for t in tasks for p in src.data["tasks"][t]["points"] if p["flops"]] or [1])
        placed = []
        for ax, task in zip(axes, tasks):
            groups = _grouped(src.data["tasks"][task]["points"])
            for x, y, fl, ps in groups:
                size = 18 + 160 * (fl / biggest if biggest else 0)
                on = any(p.get("frontier") for p in ps)
                ax.scatter([x + 1], [y], s=size, color=color[ps[0]["system"]], alpha=0.8,
                           edgecolors="#000000" if on else "none", linewidths=1.2 if on else 0, zorder=3)
            ax.set_xscale("log")
            ax.set_xlabel("bits that crossed (+1, log scale)")
            ax.set_ylabel("score (T1 recall / T2 discrimination)")
            ax.set_title(f"{task.upper()}")
            xs = [g[0] + 1 for g in groups] or [1]
            ax.set_xlim(min(xs) / 3, max(xs) * 6)
            ys = [g[1] for g in groups] or [0]
            ax.set_ylim(min(0, min(ys)) - 0.15, max(1, max(ys)) + 0.15)
        handles = [plt.Line2D([], [], marker="o", linestyle="none", color=color[s], label=s) for s in systems]
        handles.append(plt.Line2D([], [], marker="o", linestyle="none", color="#BBBBBB", markeredgecolor="#000000",
                                  label="on the frontier"))
        fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 6), fontsize=7, frameon=False)
        fig.suptitle(f"urd rung 2 — Pareto sweep, {src.label} (marker area: consolidation FLOPs)", y=0.995,
                     fontsize=9)
        fig.subplots_adjust(left=0.07, right=0.98, top=0.82, bottom=0.2, wspace=0.25)
        _footer(fig, footer)
        for ax, task in zip(axes, tasks):
            groups = _grouped(src.data["tasks"][task]["points"])
            placed += place_labels(ax, [(g[0] + 1, g[1]) for g in groups], [_group_label(g[3]) for g in groups],
                                   fontsize=6)
    return fig, axes, placed


def pareto_png(src: Source, path, dpi: int, footer: str) -> None:
    fig, _, _ = pareto_figure(src, dpi, footer)
    save_png(fig, path, dpi)


# --- dose -----------------------------------------------------------------------------------
def dose_document(sources: list[Source], built_at: str | None) -> Doc:
    doc = Doc("urd rung 2 — dose-response per scale (the replay recipe from its entire tuned state)")
    if sources:
        doc.para(sources[0].data["method"] + ". * = out of contract (dose above 1).")
    for src in sources:
        doc.heading(f"{src.label} (recipe {src.data['recipe']})")
        rows = []
        for d in sorted(src.data["doses"].values(), key=lambda d: d["dose"]):
            t1, t2 = d["tasks"].get("t1"), d["tasks"].get("t2")
            measured = [t["dose_measured"] for t in d["tasks"].values() if t["dose_measured"]["min"] is not None]
            span = (f"{min(m['min'] for m in measured):.2f}–{max(m['max'] for m in measured):.2f}"
                    if measured else "n/a")
            rows.append([f"{d['dose']:g}{'*' if d['out_of_contract'] else ''}", span,
                         pct(t1["retention"]) if t1 else "not run", pct(t2["retention"]) if t2 else "not run",
                         pct(t2["rate_trigger"]) if t2 else "", pct(t2["rate_non_trigger"]) if t2 else "",
                         _num(t2["difference"]) if t2 else ""])
        doc.table(["dose (x cap)", "measured dose", "T1 retention", "T2 retention", "T2 trigger", "T2 non-trigger",
                   "T2 difference"], rows)
    _provenance(doc, sources, built_at)
    return doc


def dose_figure(src: Source, dpi: int, footer: str):
    doses = sorted(src.data["doses"].values(), key=lambda d: d["dose"])
    series = [("T1 retention", "t1", "retention"), ("T2 trigger rate", "t2", "rate_trigger"),
              ("T2 non-trigger rate", "t2", "rate_non_trigger"), ("T2 difference", "t2", "difference")]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.0, 4.2), dpi=dpi)
        pts, texts = [], []
        for i, (label, task, key) in enumerate(series):
            xy = [(d["dose"], d["tasks"][task][key]) for d in doses if task in d["tasks"]
                  and d["tasks"][task].get(key) is not None]
            if not xy:
                continue
            ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", markersize=4, color=COLORS[i], label=label)
            pts += xy
            texts += [f"{y:.0%}" if key != "difference" else f"{y:+.2f}" for _, y in xy]
        ax.set_xscale("log")
        ax.set_xticks([d["dose"] for d in doses], [f"{d['dose']:g}x" for d in doses])
        ax.minorticks_off()
        ax.axvline(1.0, color="#999999", linewidth=0.8, linestyle="--")
        ys = [y for _, y in pts] or [0]
        ax.set_ylim(min(0, min(ys)) - 0.2, max(1, max(ys)) + 0.2)
        xs = [d["dose"] for d in doses] or [1]
        ax.set_xlim(min(xs) / 1.8, max(xs) * 1.8)
        ax.set_xlabel("dose: trained tokens / contract cap (log; dashed: the cap)")
        ax.set_ylabel("rate / retention")
        ax.set_title(f"urd rung 2 — dose-response, {src.label} ({src.data['recipe']}, full tuned state)")
        ax.legend(fontsize=7, frameon=False, loc="upper left")
        fig.subplots_adjust(left=0.1, right=0.97, top=0.9, bottom=0.2)
        _footer(fig, footer)
        placed = place_labels(ax, pts, texts, fontsize=6)
    return fig, ax, placed


def dose_png(src: Source, path, dpi: int, footer: str) -> None:
    fig, _, _ = dose_figure(src, dpi, footer)
    save_png(fig, path, dpi)
