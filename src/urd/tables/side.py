"""Side metrics of each cell: what the retention number does not show.

T1: confabulation rate (share of never-seen keys answered with a value) in the control (A) and
in session B. T2: application rate on trigger and on non-trigger queries, A and B (the
discrimination score is their difference). Both: fiche bytes against the budget, and the
consolidation tokens declared against the contract's cap (10 x the transcript's tokens).
Means over the episodes, with the maximum where a budget is concerned.
"""

from __future__ import annotations

from .render import Doc, csv_text, pct
from .retention import splits_of, system_order
from .sources import Source


def _num(x) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def _mean_max(stat: dict | None) -> str:
    if not stat or stat.get("mean") is None:
        return "n/a"
    return f"{_num(stat['mean'])} (max {_num(stat['max'])})"


def _cells(src: Source, order: list[str] | None):
    s = src.data
    for system in system_order(s, order):
        for task in ("t1", "t2"):
            for split, _ in splits_of(s):
                cell = s["cells"][system].get(task, {}).get(split)
                if cell is not None:
                    yield system, task, split, cell


def document(sources: list[Source], built_at: str | None, order: list[str] | None = None) -> Doc:
    doc = Doc("urd rung 1 — side metrics")
    doc.para("Means over the evaluated episodes. A = in-session control (no boundary), B = session B "
             "from the fiche. * = out of contract. Tokens: consolidation tokens the system declared "
             "(the harness also meters the backbone and fails a system that declares fewer than it used); "
             "cap = consolidation factor x the transcript's tokens.")
    for src in sources:
        doc.heading(src.label)
        doc.para(f"Source: {src.line()}.")
        t1, t2 = [], []
        for system, task, split, c in _cells(src, order):
            name = system + ("*" if c.get("out_of_contract") else "")
            common = [f"{_mean_max(c.get('fiche_bytes'))} / {_num(c.get('budget_bytes'))}",
                      _mean_max(c.get("declared_tokens")), _mean_max(c.get("token_cap"))]
            if task == "t1":
                t1.append([name, split, pct(c.get("confabulation_A")), pct(c.get("confabulation_B"))] + common)
            else:
                t2.append([name, split, pct(c.get("rate_trigger_A")), pct(c.get("rate_trigger_B")),
                           pct(c.get("rate_non_trigger_A")), pct(c.get("rate_non_trigger_B"))] + common)
        tail = ["fiche bytes / budget", "consolidation tokens", "token cap"]
        if t1:
            doc.heading("T1 — confabulation on never-seen keys", 3)
            doc.table(["system", "split", "confab. A", "confab. B"] + tail, t1, "ll" + "r" * 5)
        if t2:
            doc.heading("T2 — application rates", 3)
            doc.table(["system", "split", "trigger A", "trigger B", "non-trigger A", "non-trigger B"] + tail,
                      t2, "ll" + "r" * 7)
    doc.heading("Provenance")
    doc.bullets([s.line() for s in sources] + [f"table built at commit {built_at or 'unknown'}"])
    return doc


CSV_HEADER = [
    "scale", "system", "task", "split", "out_of_contract", "budget_bytes",
    "confabulation_A", "confabulation_B", "rate_trigger_A", "rate_trigger_B",
    "rate_non_trigger_A", "rate_non_trigger_B", "fiche_bytes_mean", "fiche_bytes_max",
    "declared_tokens_mean", "declared_tokens_max", "metered_tokens_mean", "token_cap_mean",
    "summary_sha256",
]


def csv_rows(sources: list[Source], order: list[str] | None = None) -> str:
    rows = []
    for src in sources:
        for system, task, split, c in _cells(src, order):
            g = lambda k, sub=None, c=c: (c.get(k) or {}).get(sub) if sub else c.get(k)
            rows.append([
                src.label, system, task, split, str(bool(c.get("out_of_contract"))).lower(), c.get("budget_bytes"),
                g("confabulation_A"), g("confabulation_B"), g("rate_trigger_A"), g("rate_trigger_B"),
                g("rate_non_trigger_A"), g("rate_non_trigger_B"), g("fiche_bytes", "mean"), g("fiche_bytes", "max"),
                g("declared_tokens", "mean"), g("declared_tokens", "max"), g("metered_tokens", "mean"),
                g("token_cap", "mean"), src.sha256,
            ])
    return csv_text(CSV_HEADER, rows)
