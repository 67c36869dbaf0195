"""The retention table: the write-up's layout, with a bootstrap interval per cell.

One block per scale (only the scales whose summary.json is given: a scale not built is left
out, never filled in); rows are systems, columns T1 over, T1 sanity, T2 over, T2 sanity; an
out-of-contract system carries `*`; the last row is the T1 oracle ceiling of each split. As in
the write-up, systems whose cells read the same are merged into one row ("a / b / c").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data import TASKS
from .bootstrap import Bootstrap, Interval, retention_interval
from .render import Doc, csv_text, pct, pct_interval, rounded
from .sources import Source


@dataclass(frozen=True)
class Cell:
    scale: str
    system: str
    task: str
    split: str
    budget_bytes: int | None
    out_of_contract: bool
    score_a: float | None
    score_b: float | None
    interval: Interval
    oracle_ceiling: float | None

    def text(self) -> str:
        iv = self.interval
        if iv.point is None:
            return f"n/a ({iv.reason})"
        ci = pct_interval(iv.low, iv.high)
        return f"{pct(iv.point)} {ci}" if ci else f"{pct(iv.point)} [CI n/a: {iv.reason}]"


def splits_of(summary: dict) -> list[tuple[str, int | None]]:
    """The splits present, ordered by budget (over, then sanity)."""
    seen: dict[str, int | None] = {}
    for tasks in summary["cells"].values():
        for splits in tasks.values():
            for split, cell in splits.items():
                seen.setdefault(split, cell.get("budget_bytes"))
    return sorted(seen.items(), key=lambda kv: (kv[1] is None, kv[1] or 0, kv[0]))


def system_order(summary: dict, order: list[str] | None) -> list[str]:
    present = list(summary["cells"])
    first = [s for s in (order or []) if s in present]
    return first + sorted(s for s in present if s not in first)


def episode_pairs(cell: dict) -> tuple[list[float], list[float]]:
    """Per-episode scores A and B, leaving out an episode without a score (a reduced run's
    episode with no query of a class), as the cell's point estimate does."""
    eps = sorted((e for e in cell["episodes"] if e["score_A"] is not None and e["score_B"] is not None),
                 key=lambda e: e["episode"])
    return [e["score_A"] for e in eps], [e["score_B"] for e in eps]


def cap_ratio_notes(summary: dict, order: list[str] | None = None) -> list[str]:
    """'replay_banc: T1 21.3-22.0x the cap, T2 216-231x' for each out-of-contract system, from
    the episodes' own declared tokens and caps: a transcript's length sets its cap, so no one
    ratio holds for every episode."""
    notes = []
    for system in system_order(summary, order):
        parts = []
        for task in TASKS:
            ratios = [e["declared_tokens"] / e["token_cap"]
                      for cell in summary["cells"][system].get(task, {}).values() if cell.get("out_of_contract")
                      for e in cell.get("episodes", []) if e.get("token_cap")]
            if ratios:
                lo, hi = min(ratios), max(ratios)
                span = f"{_x(lo)}" if _x(lo) == _x(hi) else f"{_x(lo)}–{_x(hi)}"
                parts.append(f"{task.upper()} {span}× the cap")
        if parts:
            notes.append(f"{system}: " + ", ".join(parts))
    return notes


def _x(ratio: float) -> str:
    return f"{ratio:.1f}" if ratio < 100 else f"{ratio:.0f}"


def build_cells(source: Source, oracle: dict | None, boot: Bootstrap, order: list[str] | None = None) -> list[Cell]:
    summary = source.data
    out = []
    for system in system_order(summary, order):
        for task in TASKS:
            for split, _budget in splits_of(summary):
                cell = summary["cells"][system].get(task, {}).get(split)
                if cell is None:
                    continue
                a, b = episode_pairs(cell)
                ceiling = None
                if task == "t1" and oracle:
                    ceiling = oracle.get("t1_oracle", {}).get(split, {}).get("ceiling")
                out.append(Cell(source.label, system, task, split, cell.get("budget_bytes"),
                                bool(cell.get("out_of_contract")), cell.get("score_A"), cell.get("score_B"),
                                retention_interval(a, b, boot), ceiling))
    return out


def _columns(cells: list[Cell]) -> list[tuple[str, str]]:
    cols = []
    for task in TASKS:
        for c in cells:
            if c.task == task and (task, c.split) not in cols:
                cols.append((task, c.split))
    budgets = {(c.task, c.split): c.budget_bytes or 0 for c in cells}
    return sorted(cols, key=lambda ts: (ts[0], budgets[ts], ts[1]))


def rank(systems: list[str], by_key: dict, cols: list[tuple[str, str]]) -> list[str]:
    """The write-up's row order: by the first column's retention, highest first; undefined
    last; ties keep the given (config) order. Out-of-contract systems are never ranked with the
    rest: they follow every ranked row, in the same order among themselves."""
    def key(item):
        pos, system = item
        first = by_key.get((system, *cols[0])) if cols else None
        point = first.interval.point if first else None
        ooc = any(c.out_of_contract for k, c in by_key.items() if k[0] == system)
        return (ooc, point is None, -(point or 0.0), pos)
    return [s for _, s in sorted(enumerate(systems), key=key)]


def block_rows(cells: list[Cell], oracle: dict | None) -> tuple[list[str], list[list[str]]]:
    cols = _columns(cells)
    header = ["system"] + [f"{t.upper()} {s}" for t, s in cols]
    rows: list[list[str]] = []
    names: list[list[str]] = []
    by_key = {(c.system, c.task, c.split): c for c in cells}
    systems = rank(list(dict.fromkeys(c.system for c in cells)), by_key, cols)
    for system in systems:
        mine = [by_key.get((system, t, s)) for t, s in cols]
        label = system + ("*" if any(c and c.out_of_contract for c in mine) else "")
        texts = [c.text() if c else "not run" for c in mine]
        for i, row in enumerate(rows):  # merge with an identical row, as the write-up does,
            if row == texts and names[i][0].endswith("*") == label.endswith("*"):  # never across the contract
                names[i].append(label)
                break
        else:
            rows.append(texts)
            names.append([label])
    body = [[" / ".join(n)] + r for n, r in zip(names, rows)]
    if oracle:
        ceil = oracle.get("t1_oracle", {})
        body.append(["oracle ceiling (T1 recall bound)"] + [
            pct(ceil[s]["ceiling"]) if t == "t1" and s in ceil else "—" for t, s in cols
        ])
    return header, body


def document(sources: list[Source], oracle: Source | None, boot: Bootstrap, built_at: str | None,
             order: list[str] | None = None, omitted: list[str] | None = None) -> tuple[Doc, list[Cell]]:
    doc = Doc("urd rung 1 — retention B/A")
    doc.para("Retention B/A: score in session B (from the fiche alone) divided by the same model's "
             "in-session control score A, as the ratio of the episode means. Cells: retention "
             f"[{boot.describe()}]. * = out of contract (measured, never ranked). "
             "n/a (A = 0): the control scores 0 on these episodes, so B/A has no value. Rows are "
             "ranked by the first column, highest first; systems whose cells read the same share a row.")
    all_cells: list[Cell] = []
    oracle_data = oracle.data if oracle else None
    for src in sources:
        cells = build_cells(src, oracle_data, boot, order)
        all_cells += cells
        n_eps = sorted({c.interval.n_episodes for c in cells})
        doc.heading(src.label)
        doc.para(f"Episodes per cell: {' / '.join(map(str, n_eps))}. Source: {src.line()}.")
        header, rows = block_rows(cells, oracle_data)
        doc.table(header, rows)
        notes = cap_ratio_notes(src.data, order)
        if notes:
            doc.para("Out of contract, as measured (declared consolidation tokens over the cap of "
                     "each episode's transcript): " + "; ".join(notes) + ".")
    if omitted:
        doc.para("Not built, so not shown: " + ", ".join(omitted) + ".")
    prov = [s.line() for s in sources]
    if oracle:
        prov.append(f"oracle: {oracle.path} sha256 {oracle.sha256}")
    prov.append(f"table built at commit {built_at or 'unknown'}")
    doc.heading("Provenance")
    doc.bullets(prov)
    return doc, all_cells


CSV_HEADER = [
    "scale", "system", "task", "split", "budget_bytes", "out_of_contract", "n_episodes",
    "score_A", "score_B", "retention", "ci_low", "ci_high", "ci_level", "resamples",
    "bootstrap_seed", "undefined_resamples", "undefined", "oracle_ceiling", "summary_sha256",
]


def csv_rows(cells: list[Cell], sources: list[Source], boot: Bootstrap) -> str:
    digest = {s.label: s.sha256 for s in sources}
    rows = []
    for c in cells:
        iv = c.interval
        rows.append([
            c.scale, c.system, c.task, c.split, c.budget_bytes, str(c.out_of_contract).lower(),
            iv.n_episodes, c.score_a, c.score_b, rounded(iv.point), rounded(iv.low), rounded(iv.high),
            boot.level, boot.resamples, boot.seed, iv.undefined_resamples, iv.reason, c.oracle_ceiling,
            digest[c.scale],
        ])
    return csv_text(CSV_HEADER, rows)
